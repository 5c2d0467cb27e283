// Memory-mapped SafeTensors checkpoints: one file, or a sharded set found through
// model.safetensors.index.json or the model-XXXXX-of-YYYYY naming.
//
// Everything in a header is validated before any tensor is handed out: header length against
// the file size, dtype names, shape × dtype size == data_offsets span, offsets inside the
// data section, no overlapping tensors, no duplicate names (within and across files).
// Errors: a missing path -> VT_STATUS_FILE_NOT_FOUND naming it; an unreadable one ->
// VT_STATUS_IO_ERROR; anything corrupt -> VT_STATUS_FORMAT_ERROR naming the file and tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "json.h"

namespace vt {

// A read-only private mapping of a whole regular file (empty files are allowed: data() is
// null). FIFOs, devices and sockets are refused (IO_ERROR) without blocking. The mapping is
// guarded (file_guard.h): if another process truncates the file while it is read, the
// missing pages read as zeros instead of killing the process with SIGBUS, and changed()
// says so; whoever read from it checks changed() before trusting what it read.
class MappedFile {
public:
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    int64_t modified_ns() const { return mtime_ns_; }  // st_mtime when mapped

    // True when a read hit a page the file no longer has (it was truncated) or, with
    // `restat`, when the file at path() is the same file with another size or modification
    // time than when it was mapped (rewritten in place). A file replaced by another (a
    // rename over it) is not a change: the mapping still holds the old one, consistently.
    bool changed(bool restat) const;
    // IO_ERROR "<path> changed or was truncated while it was being loaded" when changed().
    void check_unchanged(bool restat) const;

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    int guard_ = -1;
    uint64_t dev_ = 0, ino_ = 0;
    int64_t mtime_ns_ = 0;
};

struct TensorView {
    std::string name;
    std::string dtype_name;       // as written in the header, e.g. "BF16"
    bool float_dtype = false;     // F32, F16 or BF16 (the dtypes weights may have)
    vt_dtype dtype = VT_DTYPE_F32;  // valid when float_dtype
    int ggml = -1;                // GGML block type of a GGML_* tensor (ggml_import.h), else -1
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;  // inside the file mapping (may be unaligned)
    size_t nbytes = 0;
    size_t file = 0;              // index into Checkpoint::files()
    // A references file's Q or K projection as llama.cpp's converter stores it: within each of
    // this many heads, rows (i, i + head_dim/2) adjacent (row h·hd + 2j + i holds Hugging
    // Face's row h·hd + i·hd/2 + j). 0: rows in order. The loader reorders them (unpermuted()).
    int64_t permuted_heads = 0;
    // With permuted_heads: how many of each head's rows are in pair order (the rotary dims of
    // a family whose RoPE rotates pairs (2j, 2j + 1), GLM's first half); the rest are in order.
    // 0: the whole head.
    int64_t permuted_rotary = 0;
    // A references file's GPT-NeoX / Falcon query_key_value weight as llama.cpp's converter
    // stores it: q | k | v blocks, q of qkv_heads heads and k and v of qkv_kv_heads each, not the
    // Hugging Face groups per KV head ([q, k, v] per head; Falcon's [q·g, k, v]) (the loader packs
    // it as it is instead of regrouping it). "pyvt_qkv_heads": n (both n) or [heads, KV heads].
    // 0: the family's own order.
    int64_t qkv_heads = 0;
    int64_t qkv_kv_heads = 0;
    // A GPT-2 Conv1D weight (c_attn, c_proj, c_fc) held as a linear's [out, in] rows, not
    // Conv1D's [in, out] ("pyvt_out_in": true; a GGUF's blocks, which cannot be transposed):
    // the loader packs it as it is instead of transposing it.
    bool out_in = false;

    int64_t numel() const;
    std::string shape_str() const;  // "[2048, 64]"
};

// The references file of a folder pyvt converted from a GGUF (pyvt/convert.py, gguf_refs):
// tensors the folder does not copy because the GGUF holds them as they are (Q8_0 / Q4_0 / Q4_1
// blocks). It is a SafeTensors header on its own, whose data_offsets count from the start of
// the GGUF file named in "__metadata__" together with the size and modification time that file
// had at conversion:
//   {"__metadata__": {"format": "pyvt-gguf-refs", "file": "/abs/model.gguf", "size": N,
//                     "mtime_ns": T},
//    "model.layers.0.mlp.up_proj.weight": {"dtype": "GGML_Q8_0", "shape": [rows, cols],
//                                          "data_offsets": [begin, end]}, ...}
// Checkpoint adds its tensors when it lies beside the weights. A GGUF that has changed since
// (another size or modification time) is refused, naming both files.
constexpr const char* kGgufRefsName = "pyvt_gguf.json";

// One mapped .safetensors file with its validated header; or (FromRefs) the GGUF a references
// file names, mapped, with the tensors the references file lists (validated alike).
class SafeTensorsFile {
public:
    struct FromRefs {};
    struct Refs;  // the references file read (safetensors.cpp)
    explicit SafeTensorsFile(const std::string& path, size_t file_index = 0);
    SafeTensorsFile(const std::string& refs_path, size_t file_index, FromRefs);
    const std::string& path() const { return map_.path(); }
    const std::vector<TensorView>& tensors() const { return tensors_; }
    const MappedFile& mapping() const { return map_; }

private:
    SafeTensorsFile(const Refs& refs, size_t file_index);
    MappedFile map_;
    std::vector<TensorView> tensors_;

    friend class Checkpoint;  // (add_name_prefix renames tensors_)
    void read_header(size_t file_index);
    // The tensors of a parsed SafeTensors-style JSON header `hdr`, their data_offsets counted
    // from `base` (data_size bytes); `label` names the header in errors.
    void parse_header(const json::Value& hdr, const uint8_t* base, uint64_t data_size, const std::string& label,
                      size_t file_index, bool refs = false);
};

class Checkpoint {
public:
    // path: a .safetensors file, one shard, an index .json, or a folder holding either.
    static std::unique_ptr<Checkpoint> open(const std::string& path);

    // Folder holding the weights (where config.json is looked up).
    const std::string& dir() const { return dir_; }
    const std::vector<std::unique_ptr<SafeTensorsFile>>& files() const { return files_; }
    // All tensors, sorted by name.
    const std::vector<const TensorView*>& tensors() const { return sorted_; }
    const TensorView* find(const std::string& name) const;
    const std::string& file_of(const TensorView& t) const { return files_[t.file]->path(); }
    // IO_ERROR naming the first file that changed underneath its mapping (MappedFile::changed):
    // cheap without `restat` (a flag per file; call it often), one stat per file with it.
    void check_unchanged(bool restat) const;
    // Drops the whole pages of `t`'s data from this process's memory (MADV_DONTNEED) once it
    // has been packed: the loader's peak resident size is then the packed weights plus about
    // one layer of the file, not the packed weights plus the whole file. The pages stay in
    // the page cache; a later read of `t` maps them again (the same bytes: the mapping is
    // private and never written).
    void release(const TensorView& t) const;
    // Every tensor not named `keep` whose name does not start with `prefix` gets it (GPT-2's
    // files without "transformer."); the index is rebuilt (a name then held twice is refused).
    void add_name_prefix(const std::string& prefix, const std::string& keep);

private:
    void index();
    std::string dir_;
    std::vector<std::unique_ptr<SafeTensorsFile>> files_;
    std::unordered_map<std::string, const TensorView*> by_name_;
    std::vector<const TensorView*> sorted_;

    static std::unique_ptr<Checkpoint> open_index(const std::string& index_path);
    void add_file(const std::string& path);
    void finish();
};

// t's bytes with its rows in order (t.permuted_heads undone) into dst (t.nbytes).
void unpermute_rows(const TensorView& t, uint8_t* dst);
// The same order for `n` units of `unit` bytes in `heads` heads, the first `rotary` units of
// each in pair order (0: all): src unit h·hd + 2j + i goes to h·hd + i·rotary/2 + j.
void unpermute_units(const uint8_t* src, uint8_t* dst, int64_t n, size_t unit, int64_t heads, int64_t rotary);

// A fused query_key_value's n = (nh + 2·kv)·hd units (rows of `unit` bytes, or floats of its
// bias) in groups, one per KV head — nh / kv query heads, one key head, one value head, hd
// units each (GPT-NeoX: [q, k, v] per head) — from src into dst in q|k|v order.
void regroup_qkv_units(const uint8_t* src, uint8_t* dst, size_t unit, int64_t nh, int64_t kv, int64_t hd);

// Filesystem helpers shared with config.cpp.
bool path_exists(const std::string& path);
// Like path_exists, but also true for a dangling or looping symlink (lstat): a file that is
// there but cannot be read must be reported, not skipped.
bool entry_exists(const std::string& path);
bool is_directory(const std::string& path);
std::string dirname_of(const std::string& path);
std::string basename_of(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);
// Whole file contents; FILE_NOT_FOUND / IO_ERROR / FORMAT_ERROR (over max_size) naming it.
std::string read_file(const std::string& path, size_t max_size);

}  // namespace vt
