#include "safetensors.h"
#include "ggml_import.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "file_guard.h"
#include "json.h"

namespace vt {

// ---- Filesystem helpers ----------------------------------------------------------------

bool path_exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string dirname_of(const std::string& path) {
    size_t end = path.size();
    while (end > 1 && path[end - 1] == '/') --end;
    size_t slash = path.rfind('/', end - 1);
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

std::string basename_of(const std::string& path) {
    size_t end = path.size();
    while (end > 1 && path[end - 1] == '/') --end;
    size_t slash = path.rfind('/', end - 1);
    size_t begin = slash == std::string::npos ? 0 : slash + 1;
    return path.substr(begin, end - begin);
}

std::string join_path(const std::string& dir, const std::string& name) {
    if (dir.empty() || dir == ".") return name;
    if (dir.back() == '/') return dir + name;
    return dir + "/" + name;
}

[[noreturn]] static void fail_open(const std::string& path, int err) {
    if (err == ENOENT || err == ENOTDIR)
        fail(VT_STATUS_FILE_NOT_FOUND, "no such file or directory: %s", path.c_str());
    fail(VT_STATUS_IO_ERROR, "cannot open %s: %s", path.c_str(), std::strerror(err));
}

// Opens path for reading and checks that it is a regular file. O_NONBLOCK: opening a FIFO
// (a hostile model folder may hold one) must not wait for a writer; it is then refused.
static int open_regular(const std::string& path, struct stat* st) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail_open(path, errno);
    if (::fstat(fd, st) != 0) {
        int err = errno;
        ::close(fd);
        fail_open(path, err);
    }
    if (S_ISDIR(st->st_mode)) {
        ::close(fd);
        fail(VT_STATUS_IO_ERROR, "%s is a directory, not a file", path.c_str());
    }
    if (!S_ISREG(st->st_mode)) {
        ::close(fd);
        fail(VT_STATUS_IO_ERROR, "%s is not a regular file (a device, FIFO or socket)", path.c_str());
    }
    return fd;
}

bool entry_exists(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

std::string read_file(const std::string& path, size_t max_size) {
    struct stat st;
    int fd = open_regular(path, &st);
    if (st.st_size < 0 || size_t(st.st_size) > max_size) {
        ::close(fd);
        fail(VT_STATUS_FORMAT_ERROR, "%s: %lld bytes is larger than the %zu-byte limit for this file",
             path.c_str(), (long long)st.st_size, max_size);
    }
    std::string out;
    try {
        out.resize(size_t(st.st_size));
    } catch (...) {
        ::close(fd);
        throw;
    }
    size_t got = 0;
    while (got < out.size()) {
        ssize_t r = ::read(fd, &out[got], out.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) {
            ::close(fd);
            fail(VT_STATUS_IO_ERROR, "%s changed or was truncated while it was being read (%zu of %zu bytes)",
                 path.c_str(), got, out.size());
        }
        if (r < 0) {
            int err = errno;
            ::close(fd);
            fail(VT_STATUS_IO_ERROR, "cannot read %s: %s", path.c_str(), std::strerror(err));
        }
        got += size_t(r);
    }
    ::close(fd);
    return out;
}

// ---- MappedFile ------------------------------------------------------------------------

namespace {

int64_t mtime_ns(const struct stat& st) {
#ifdef __APPLE__
    return int64_t(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
#else
    return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
#endif
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
    struct stat st;
    int fd = open_regular(path, &st);
    size_ = size_t(st.st_size);
    dev_ = uint64_t(st.st_dev);
    ino_ = uint64_t(st.st_ino);
    mtime_ns_ = mtime_ns(st);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            if (err == ENOMEM) fail(VT_STATUS_OUT_OF_MEMORY, "cannot map %s: out of address space", path.c_str());
            fail(VT_STATUS_IO_ERROR, "cannot map %s: %s", path.c_str(), std::strerror(err));
        }
        // Weights are read once, front to back within each tensor: ask for read-ahead.
        ::madvise(p, size_, MADV_WILLNEED);
        data_ = static_cast<const uint8_t*>(p);
        guard_ = guard_mapping(p, size_);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
    unguard_mapping(guard_);
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

bool MappedFile::changed(bool restat) const {
    if (guard_faulted(guard_)) return true;
    if (!restat) return false;
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0) return false;  // removed: the mapping holds the old file
    if (uint64_t(st.st_dev) != dev_ || uint64_t(st.st_ino) != ino_) return false;  // replaced, likewise
    return size_t(st.st_size) != size_ || mtime_ns(st) != mtime_ns_;
}

void MappedFile::check_unchanged(bool restat) const {
    if (changed(restat))
        fail(VT_STATUS_IO_ERROR, "%s changed or was truncated while it was being loaded (another process "
             "wrote to it)", path_.c_str());
}

// ---- TensorView ------------------------------------------------------------------------

int64_t TensorView::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;  // validated against overflow at parse time
    return n;
}

std::string TensorView::shape_str() const {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// ---- One file --------------------------------------------------------------------------

namespace {

struct DtypeDesc {
    const char* name;
    size_t size;  // bytes per element (per block for the GGML block types)
    bool is_float;
    vt_dtype dtype;
    int ggml = -1;  // GGML block type (ggml_import.h) or -1
};

// Every dtype the SafeTensors format defines with a whole-byte element size. Only the
// three float ones can be weights; the others are listed so their sizes can be validated.
const DtypeDesc kDtypes[] = {
    {"F32", 4, true, VT_DTYPE_F32},      {"F16", 2, true, VT_DTYPE_F16},
    {"BF16", 2, true, VT_DTYPE_BF16},    {"F64", 8, false, VT_DTYPE_F64},
    {"I64", 8, false, VT_DTYPE_I64},     {"U64", 8, false, VT_DTYPE_I64},
    {"I32", 4, false, VT_DTYPE_I32},     {"U32", 4, false, VT_DTYPE_I32},
    {"I16", 2, false, VT_DTYPE_I32},     {"U16", 2, false, VT_DTYPE_I32},
    {"I8", 1, false, VT_DTYPE_I8},       {"U8", 1, false, VT_DTYPE_U8},
    {"BOOL", 1, false, VT_DTYPE_U8},     {"F8_E4M3", 1, false, VT_DTYPE_F8_E4M3},
    {"F8_E5M2", 1, false, VT_DTYPE_U8},  {"F8_E8M0", 1, false, VT_DTYPE_U8},
    // pyvt's own: GGUF quantized blocks kept as they are (ggml_import.h). The shape is the
    // logical [rows, cols] (cols a multiple of 32); the data is rows * cols / 32 blocks.
    {"GGML_Q8_0", 34, false, VT_DTYPE_U8, kGgmlQ8_0},
    {"GGML_Q4_0", 18, false, VT_DTYPE_U8, kGgmlQ4_0},
    {"GGML_Q4_1", 20, false, VT_DTYPE_U8, kGgmlQ4_1},
    // (per block of 32 weights; Q4_K, Q6_K and IQ4_XS per superblock of 256; ggml_import.h)
    {"GGML_Q5_0", 22, false, VT_DTYPE_U8, kGgmlQ5_0},
    {"GGML_Q4_K", 144, false, VT_DTYPE_U8, kGgmlQ4_K},
    {"GGML_Q6_K", 210, false, VT_DTYPE_U8, kGgmlQ6_K},
    {"GGML_IQ4_NL", 18, false, VT_DTYPE_U8, kGgmlIQ4_NL},
    {"GGML_IQ4_XS", 136, false, VT_DTYPE_U8, kGgmlIQ4_XS},
};

const DtypeDesc* find_dtype(const std::string& name) {
    for (const auto& d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

constexpr uint64_t kMaxHeader = 100000000;  // the SafeTensors reference implementation's limit

json::ParseOptions header_options();

}  // namespace

SafeTensorsFile::SafeTensorsFile(const std::string& path, size_t file_index) : map_(path) {
    try {
        read_header(file_index);
    } catch (const Error&) {
        map_.check_unchanged(false);  // an error from reading zeros where the file was cut off
        throw;
    }
}

struct SafeTensorsFile::Refs {
    std::string path;  // the references file
    json::Document doc;  // its JSON, parsed once
    std::string file;  // the GGUF it names
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

namespace {

SafeTensorsFile::Refs read_refs(const std::string& refs_path) {
    SafeTensorsFile::Refs r;
    r.path = refs_path;
    const std::string text = read_file(refs_path, kMaxHeader);
    const char* p = refs_path.c_str();
    r.doc = json::parse(text.data(), text.size(), refs_path, header_options());
    const json::Value* meta = r.doc.root().is_object() ? r.doc.root().find("__metadata__") : nullptr;
    const json::Value* file = meta && meta->is_object() ? meta->find("file") : nullptr;
    const json::Value* size = meta && meta->is_object() ? meta->find("size") : nullptr;
    const json::Value* mtime = meta && meta->is_object() ? meta->find("mtime_ns") : nullptr;
    const json::Value* format = meta && meta->is_object() ? meta->find("format") : nullptr;
    if (!format || !format->is_string() || format->s != "pyvt-gguf-refs")
        fail(VT_STATUS_FORMAT_ERROR, "%s: not a pyvt GGUF references file (its __metadata__ lacks "
             "\"format\": \"pyvt-gguf-refs\")", p);
    if (!file || !file->is_string() || file->s.empty() || file->s[0] != '/')
        fail(VT_STATUS_FORMAT_ERROR, "%s: __metadata__ \"file\" must be the GGUF's absolute path", p);
    if (!size || size->type != json::Type::Int || size->i < 0 || !mtime || mtime->type != json::Type::Int)
        fail(VT_STATUS_FORMAT_ERROR, "%s: __metadata__ needs the GGUF's \"size\" and \"mtime_ns\" as integers", p);
    r.file = file->s;
    r.size = uint64_t(size->i);
    r.mtime_ns = mtime->i;
    return r;
}

}  // namespace

SafeTensorsFile::SafeTensorsFile(const std::string& refs_path, size_t file_index, FromRefs)
    : SafeTensorsFile(read_refs(refs_path), file_index) {}

SafeTensorsFile::SafeTensorsFile(const Refs& r, size_t file_index) : map_(r.file) {
    // The GGUF must be the one the folder was converted from: a file rewritten since (a new
    // download under the same name) may hold other tensors at these offsets.
    if (map_.size() != r.size || map_.modified_ns() != r.mtime_ns)
        fail(VT_STATUS_FORMAT_ERROR, "%s: %s has changed since this folder was converted from it (%zu bytes, "
             "%s; converted from %llu bytes): load the .gguf itself to convert it again", r.path.c_str(),
             r.file.c_str(), map_.size(), map_.size() == r.size ? "modified since" : "another size",
             (unsigned long long)r.size);
    try {
        parse_header(r.doc.root(), map_.data(), map_.size(), r.path + " (references into " + r.file + ")", file_index,
                     true);
    } catch (const Error&) {
        map_.check_unchanged(false);
        throw;
    }
}

void SafeTensorsFile::read_header(size_t file_index) {
    const std::string& path = map_.path();
    const char* p = path.c_str();
    const size_t size = map_.size();
    if (size < 8)
        fail(VT_STATUS_FORMAT_ERROR, "%s: truncated SafeTensors file (%zu bytes; the 8-byte header length is missing)",
             p, size);
    // A file that is not SafeTensors (an index can name any readable file) is refused before
    // its first bytes are read as a header length: no bytes of a foreign file in the message.
    if (size == 8)
        fail(VT_STATUS_FORMAT_ERROR, "%s: truncated SafeTensors file (8 bytes: the header length and no header)", p);
    if (map_.data()[8] != '{')
        fail(VT_STATUS_FORMAT_ERROR, "%s: not a SafeTensors file (no JSON header after the 8-byte length)", p);
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; --k) hlen = (hlen << 8) | map_.data()[k];  // little-endian
    if (hlen > size - 8)
        fail(VT_STATUS_FORMAT_ERROR,
             "%s: truncated or corrupt SafeTensors file: header length %llu exceeds the %zu bytes after it",
             p, (unsigned long long)hlen, size - 8);
    if (hlen > kMaxHeader)
        fail(VT_STATUS_FORMAT_ERROR, "%s: SafeTensors header of %llu bytes exceeds the %llu-byte limit", p,
             (unsigned long long)hlen, (unsigned long long)kMaxHeader);
    if (hlen < 2 || map_.data()[8] != '{')
        fail(VT_STATUS_FORMAT_ERROR, "%s: not a SafeTensors file (the header does not start with '{')", p);

    const json::Document doc = json::parse(reinterpret_cast<const char*>(map_.data() + 8), size_t(hlen),
                                           path + " (SafeTensors header)", header_options());
    parse_header(doc.root(), map_.data() + 8 + hlen, size - 8 - hlen, path, file_index);
}

namespace {

json::ParseOptions header_options() {
    json::ParseOptions jopt;
    jopt.max_depth = 8;
    jopt.max_size = kMaxHeader;
    // ~9 values per tensor: 2M values are ~230k tensors (a 25 MB header; real ones are < 2 MB,
    // and a whole 671B-parameter checkpoint has 91k tensors).
    jopt.max_values = size_t(1) << 21;
    return jopt;
}

}  // namespace

void SafeTensorsFile::parse_header(const json::Value& hdr, const uint8_t* base, uint64_t data_size,
                                   const std::string& label, size_t file_index, bool refs) {
    const char* p = label.c_str();
    if (!hdr.is_object()) fail(VT_STATUS_FORMAT_ERROR, "%s: the SafeTensors header is not a JSON object", p);
    tensors_.reserve(hdr.obj.size());
    for (auto& kv : hdr.obj) {
        const std::string name = kv.first;
        const json::Value& e = kv.second;
        const char* n = name.c_str();
        if (name == "__metadata__") {
            if (!e.is_object()) fail(VT_STATUS_FORMAT_ERROR, "%s: __metadata__ is not a JSON object", p);
            continue;
        }
        if (!e.is_object()) fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: header entry is not a JSON object", p, n);
        const json::Value* dt = e.find("dtype");
        const json::Value* shape = e.find("shape");
        const json::Value* offs = e.find("data_offsets");
        if (!dt || !dt->is_string()) fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: missing or non-string \"dtype\"", p, n);
        if (!shape || !shape->is_array())
            fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: missing or non-array \"shape\"", p, n);
        if (!offs || !offs->is_array() || offs->arr.size() != 2 || offs->arr[0].type != json::Type::Int ||
            offs->arr[1].type != json::Type::Int)
            fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: \"data_offsets\" must be an array of two integers", p, n);
        const DtypeDesc* d = find_dtype(dt->s);
        if (!d) fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: unknown dtype \"%s\"", p, n, dt->s.c_str());

        TensorView t;
        t.name = name;
        t.dtype_name = dt->s;
        t.float_dtype = d->is_float;
        t.dtype = d->dtype;
        t.ggml = d->ggml;
        t.file = file_index;
        if (shape->arr.size() > 8) fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: %zu dimensions", p, n, shape->arr.size());
        uint64_t numel = 1;
        bool overflow = false;
        for (const auto& dim : shape->arr) {
            if (dim.type != json::Type::Int || dim.i < 0)
                fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: shape entries must be non-negative integers", p, n);
            t.shape.push_back(dim.i);
            if (dim.i != 0 && numel > (uint64_t(1) << 62) / uint64_t(dim.i)) overflow = true;
            numel *= uint64_t(dim.i);
        }
        const int64_t b = offs->arr[0].i, en = offs->arr[1].i;
        if (b < 0 || en < b)
            fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: invalid data_offsets [%lld, %lld]", p, n, (long long)b,
                 (long long)en);
        if (uint64_t(en) > data_size)
            fail(VT_STATUS_FORMAT_ERROR,
                 "%s: tensor %s: data_offsets [%lld, %lld] lie outside the data section (%llu bytes): "
                 "the file is truncated or corrupt",
                 p, n, (long long)b, (long long)en, (unsigned long long)data_size);
        const uint64_t span = uint64_t(en - b);
        uint64_t elems = numel;  // elements of d->size bytes
        if (d->ggml >= 0) {
            // (3-D: experts stacked, [experts, rows, cols] — GraniteMoE's input_linear / output_linear)
            const int bw = ggml_block_weights(d->ggml);
            if ((t.shape.size() != 2 && t.shape.size() != 3) || t.shape.back() % bw != 0)
                fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: a %s tensor must be 2-D (or 3-D: stacked experts) with a "
                     "multiple of %d columns, not %s", p, n, d->name, bw, t.shape_str().c_str());
            elems = numel / uint64_t(bw);
        }
        if (overflow || elems > (uint64_t(1) << 62) / d->size || elems * d->size != span)
            fail(VT_STATUS_FORMAT_ERROR,
                 "%s: tensor %s: shape %s of dtype %s needs %s bytes but data_offsets [%lld, %lld] span %llu",
                 p, n, t.shape_str().c_str(), d->name,
                 overflow ? "too many" : std::to_string(elems * d->size).c_str(), (long long)b, (long long)en,
                 (unsigned long long)span);
        t.data = base + b;
        t.nbytes = size_t(span);
        if (const json::Value* ph = e.find("pyvt_permuted_heads")) {
            auto ends = [&](const char* s) {
                const size_t k = std::strlen(s);
                return name.size() >= k && name.compare(name.size() - k, k, s) == 0;
            };
            if (!refs || ph->type != json::Type::Int || ph->i <= 0 || t.shape.size() != 2 ||
                t.shape[0] % (2 * ph->i) != 0 || !(ends("q_proj.weight") || ends("k_proj.weight")))
                fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: \"pyvt_permuted_heads\" must be a positive number of heads "
                     "dividing its %s rows into pairs of halves, on a q_proj or k_proj weight of a references file",
                     p, n, t.shape_str().c_str());
            t.permuted_heads = ph->i;
        }
        auto ends_with_name = [&](const char* s) {
            const size_t k = std::strlen(s);
            return name.size() >= k && name.compare(name.size() - k, k, s) == 0;
        };
        if (const json::Value* qh = e.find("pyvt_qkv_heads")) {
            // (GPT-NeoX's and Falcon's query_key_value; GPTBigCode's multi-head c_attn): n heads
            // with a key and value head each, or [heads, KV heads] (Falcon's grouped KV heads)
            int64_t h = 0, kv = 0;
            if (qh->type == json::Type::Int) {
                h = kv = qh->i;
            } else if (qh->is_array() && qh->arr.size() == 2 && qh->arr[0].type == json::Type::Int &&
                       qh->arr[1].type == json::Type::Int) {
                h = qh->arr[0].i;
                kv = qh->arr[1].i;
            }
            const bool fits = h > 0 && kv > 0 && kv <= h && h % kv == 0 && h <= (int64_t(1) << 20) &&
                              t.shape.size() == 2 && t.shape[0] % (h + 2 * kv) == 0;
            if (!refs || !fits ||
                !(ends_with_name("attention.query_key_value.weight") || ends_with_name("attn.c_attn.weight")))
                fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: \"pyvt_qkv_heads\" must be a positive number of heads "
                     "dividing its %s rows into q | k | v (or [heads, KV heads], the heads a multiple of the KV "
                     "heads), on a query_key_value or c_attn weight of a references file",
                     p, n, t.shape_str().c_str());
            t.qkv_heads = h;
            t.qkv_kv_heads = kv;
        }
        if (const json::Value* oi = e.find("pyvt_out_in")) {  // (a references file's or pyvt's own file's)
            if (oi->type != json::Type::Bool || !oi->b || t.shape.size() != 2 ||
                !(ends_with_name("attn.c_attn.weight") || ends_with_name("attn.c_proj.weight") ||
                  ends_with_name("mlp.c_fc.weight") || ends_with_name("mlp.c_proj.weight")))
                fail(VT_STATUS_FORMAT_ERROR, "%s: tensor %s: \"pyvt_out_in\" must be true, on a 2-D c_attn, c_proj or "
                     "c_fc weight (%s)", p, n, t.shape_str().c_str());
            t.out_in = true;
        }
        tensors_.push_back(std::move(t));
    }

    // Overlaps: sort non-empty tensors by start offset and compare neighbours.
    std::vector<const TensorView*> order;
    for (const auto& t : tensors_)
        if (t.nbytes) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) { return a->data < b->data; });
    for (size_t i = 1; i < order.size(); ++i) {
        const TensorView* a = order[i - 1];
        const TensorView* c = order[i];
        if (c->data < a->data + a->nbytes)
            fail(VT_STATUS_FORMAT_ERROR, "%s: tensors %s [%lld, %lld) and %s [%lld, %lld) overlap", p,
                 a->name.c_str(), (long long)(a->data - base), (long long)(a->data - base + a->nbytes),
                 c->name.c_str(), (long long)(c->data - base), (long long)(c->data - base + c->nbytes));
    }
}

void unpermute_units(const uint8_t* src, uint8_t* dst, int64_t n, size_t unit, int64_t heads, int64_t rotary) {
    const int64_t hd = n / heads, rd = rotary > 0 ? rotary : hd, half = rd / 2;
    for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < half; ++j)
                std::memcpy(dst + size_t(h * hd + i * half + j) * unit, src + size_t(h * hd + 2 * j + i) * unit, unit);
        if (rd < hd) std::memcpy(dst + size_t(h * hd + rd) * unit, src + size_t(h * hd + rd) * unit, size_t(hd - rd) * unit);
    }
}

void regroup_qkv_units(const uint8_t* src, uint8_t* dst, size_t unit, int64_t nh, int64_t kv, int64_t hd) {
    const int64_t per = nh / kv, qd = nh * hd, kvd = kv * hd;
    for (int64_t g = 0; g < kv; ++g) {
        const uint8_t* s = src + size_t(g * (per + 2) * hd) * unit;
        std::memcpy(dst + size_t(g * per * hd) * unit, s, size_t(per * hd) * unit);
        std::memcpy(dst + size_t(qd + g * hd) * unit, s + size_t(per * hd) * unit, size_t(hd) * unit);
        std::memcpy(dst + size_t(qd + kvd + g * hd) * unit, s + size_t((per + 1) * hd) * unit, size_t(hd) * unit);
    }
}

void unpermute_rows(const TensorView& t, uint8_t* dst) {
    const int64_t rows = t.shape[0];
    unpermute_units(t.data, dst, rows, t.nbytes / size_t(rows), t.permuted_heads, t.permuted_rotary);
}

// ---- Checkpoint (one or many files) ------------------------------------------------------

namespace {

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// "model-00001-of-00002.safetensors" -> prefix "model", width 5, total 2.
struct ShardName {
    std::string prefix;
    size_t width = 0;
    long index = 0, total = 0;
};

bool parse_shard_name(const std::string& base, ShardName* out) {
    if (!ends_with(base, ".safetensors")) return false;
    std::string stem = base.substr(0, base.size() - std::strlen(".safetensors"));
    size_t of = stem.rfind("-of-");
    if (of == std::string::npos) return false;
    std::string total = stem.substr(of + 4);
    size_t dash = stem.rfind('-', of - 1);
    if (dash == std::string::npos || of == 0) return false;
    std::string index = stem.substr(dash + 1, of - dash - 1);
    auto all_digits = [](const std::string& s) {
        return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!all_digits(total) || !all_digits(index)) return false;
    out->prefix = stem.substr(0, dash);
    out->width = index.size();
    out->index = std::stol(index);
    out->total = std::stol(total);
    return out->total >= 1 && out->index >= 1 && out->index <= out->total;
}

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (!d) fail_open(dir, errno);
    while (struct dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

std::string join_names(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += v[i];
    }
    return s;
}

}  // namespace

void Checkpoint::add_file(const std::string& path) {
    files_.push_back(std::make_unique<SafeTensorsFile>(path, files_.size()));
}

void Checkpoint::finish() {
    // A folder converted from a GGUF may hold the GGUF's blocks by reference (kGgufRefsName).
    const std::string refs = join_path(dir_, kGgufRefsName);
    if (entry_exists(refs)) files_.push_back(std::make_unique<SafeTensorsFile>(refs, files_.size(), SafeTensorsFile::FromRefs{}));
    index();
}

void Checkpoint::add_name_prefix(const std::string& prefix, const std::string& keep) {
    for (auto& f : files_)
        for (auto& t : f->tensors_)
            if (t.name != keep && t.name.compare(0, prefix.size(), prefix) != 0) t.name = prefix + t.name;
    index();
}

void Checkpoint::index() {
    by_name_.clear();
    sorted_.clear();
    for (const auto& f : files_) {
        for (const auto& t : f->tensors()) {
            auto ins = by_name_.emplace(t.name, &t);
            if (!ins.second) {
                const TensorView* other = ins.first->second;
                if (other->file == t.file)
                    fail(VT_STATUS_FORMAT_ERROR, "%s: duplicate tensor name %s", f->path().c_str(), t.name.c_str());
                fail(VT_STATUS_FORMAT_ERROR, "tensor %s is stored twice: in %s and in %s", t.name.c_str(),
                     files_[other->file]->path().c_str(), f->path().c_str());
            }
            sorted_.push_back(&t);
        }
    }
    std::sort(sorted_.begin(), sorted_.end(),
              [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
}

void Checkpoint::check_unchanged(bool restat) const {
    for (const auto& f : files_) f->mapping().check_unchanged(restat);
}

void Checkpoint::release(const TensorView& t) const {
    if (!t.data || t.nbytes == 0) return;
    static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    // Only pages wholly inside the tensor: its neighbours' bytes stay mapped.
    const uintptr_t b = (uintptr_t(t.data) + page - 1) / page * page;
    const uintptr_t e = (uintptr_t(t.data) + t.nbytes) / page * page;
    if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);  // advice: failure is harmless
}

const TensorView* Checkpoint::find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& path_in) {
    if (path_in.empty()) fail(VT_STATUS_INVALID_ARGUMENT, "empty model path");
    std::string path = path_in;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) fail_open(path, errno);

    if (S_ISDIR(st.st_mode)) {
        const std::string idx = join_path(path, "model.safetensors.index.json");
        if (path_exists(idx)) return open_index(idx);
        const std::string single = join_path(path, "model.safetensors");
        if (path_exists(single)) return open(single);
        std::vector<std::string> indexes, weights;
        for (const auto& name : list_dir(path)) {
            if (ends_with(name, ".safetensors.index.json")) indexes.push_back(name);
            else if (ends_with(name, ".safetensors")) weights.push_back(name);
        }
        if (indexes.size() == 1) return open_index(join_path(path, indexes[0]));
        if (indexes.size() > 1)
            fail(VT_STATUS_FORMAT_ERROR, "%s holds several SafeTensors indexes (%s): pass the one to load",
                 path.c_str(), join_names(indexes).c_str());
        if (weights.empty())
            fail(VT_STATUS_FILE_NOT_FOUND, "no model.safetensors, *.safetensors or model.safetensors.index.json in %s",
                 path.c_str());
        if (weights.size() == 1) return open(join_path(path, weights[0]));
        // Several files: acceptable only as one complete shard set.
        ShardName first;
        bool one_set = parse_shard_name(weights[0], &first);
        for (const auto& w : weights) {
            ShardName s;
            if (!parse_shard_name(w, &s) || s.prefix != first.prefix || s.total != first.total) one_set = false;
        }
        if (!one_set)
            fail(VT_STATUS_FORMAT_ERROR, "%s holds several .safetensors files (%s) and no index: pass the one to load",
                 path.c_str(), join_names(weights).c_str());
        return open(join_path(path, weights[0]));
    }

    if (ends_with(path, ".json")) return open_index(path);

    auto ck = std::make_unique<Checkpoint>();
    ck->dir_ = dirname_of(path);
    ShardName sn;
    if (parse_shard_name(basename_of(path), &sn) && sn.total > 1) {
        // One shard of a set: prefer the index beside it, else the naming scheme.
        for (const std::string& idx_name : {sn.prefix + ".safetensors.index.json",
                                            std::string("model.safetensors.index.json")}) {
            const std::string idx = join_path(ck->dir_, idx_name);
            if (path_exists(idx)) return open_index(idx);
        }
        for (long k = 1; k <= sn.total; ++k) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "-%0*ld-of-%0*ld.safetensors", int(sn.width), k, int(sn.width), sn.total);
            const std::string shard = join_path(ck->dir_, sn.prefix + buf);
            if (!path_exists(shard))
                fail(VT_STATUS_FILE_NOT_FOUND, "shard %ld of %ld is missing: no such file %s (given %s)", k, sn.total,
                     shard.c_str(), path.c_str());
            ck->add_file(shard);
        }
    } else {
        ck->add_file(path);
    }
    ck->finish();
    return ck;
}

constexpr size_t kMaxShards = 4096;

std::unique_ptr<Checkpoint> Checkpoint::open_index(const std::string& index_path) {
    const std::string text = read_file(index_path, size_t(64) << 20);
    const json::Document doc = json::parse(text.data(), text.size(), index_path);
    const json::Value& idx = doc.root();
    const json::Value* wm = idx.find("weight_map");
    if (!wm || !wm->is_object())
        fail(VT_STATUS_FORMAT_ERROR, "%s: missing or non-object \"weight_map\"", index_path.c_str());
    const std::string dir = dirname_of(index_path);
    std::vector<std::string> shards;  // in first-mention order
    std::unordered_set<std::string> seen;  // (a linear search here was quadratic: 160k names took 23 s)
    for (const auto& kv : wm->obj) {
        if (!kv.second.is_string() || kv.second.s.empty())
            fail(VT_STATUS_FORMAT_ERROR, "%s: weight_map[\"%s\"] is not a file name", index_path.c_str(),
                 kv.first.c_str());
        if (seen.insert(kv.second.s).second) {
            // Every shard stays mapped while the model loads: bound the files (and mappings) one
            // index can open. Real checkpoints have at most a few hundred shards.
            if (shards.size() >= kMaxShards)
                fail(VT_STATUS_FORMAT_ERROR, "%s: weight_map names more than %zu shard files", index_path.c_str(),
                     kMaxShards);
            shards.push_back(kv.second.s);
        }
    }
    if (shards.empty()) fail(VT_STATUS_FORMAT_ERROR, "%s: weight_map is empty", index_path.c_str());
    auto ck = std::make_unique<Checkpoint>();
    ck->dir_ = dir;
    for (const auto& s : shards) {
        const std::string path = s[0] == '/' ? s : join_path(dir, s);
        if (!path_exists(path)) {
            std::string example;
            for (const auto& kv : wm->obj)
                if (kv.second.s == s) { example = kv.first; break; }
            fail(VT_STATUS_FILE_NOT_FOUND, "%s names shard %s (e.g. for %s), but there is no such file: %s",
                 index_path.c_str(), s.c_str(), example.c_str(), path.c_str());
        }
        ck->add_file(path);
    }
    ck->finish();
    for (const auto& kv : wm->obj) {
        const TensorView* t = ck->find(kv.first);
        const std::string want = kv.second.s[0] == '/' ? kv.second.s : join_path(dir, kv.second.s);
        if (!t || ck->file_of(*t) != want)
            fail(VT_STATUS_FORMAT_ERROR, "%s: weight_map puts tensor %s in %s, but that file does not contain it",
                 index_path.c_str(), kv.first.c_str(), kv.second.s.c_str());
    }
    return ck;
}

}  // namespace vt
