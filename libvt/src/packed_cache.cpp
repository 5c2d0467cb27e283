// The packed-weight cache (packed_cache.h).
#include "packed_cache.h"

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "threadpool.h"

namespace vt {

namespace {

// Bumped whenever the packed layout (quant.h) or this file's layout changes: old files then
// simply miss.
constexpr uint32_t kVersion = 2;  // 2: entries carry min_off (INT4_MIN_BLOCKED)
constexpr char kMagic[8] = {'V', 'T', 'P', 'A', 'C', 'K', '\n', '\x1a'};
constexpr uint64_t kAlign = 4096;     // each linear's bytes start on a page
constexpr uint64_t kChunk = 1 << 20;  // checksum chunk (hashed in parallel)
constexpr uint32_t kMaxEntries = 1u << 20;
constexpr uint32_t kMaxName = 256;

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

uint64_t mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

// A 64-bit checksum of one chunk: four independent lanes (one multiply chain each).
uint64_t chunk_sum(const uint8_t* p, size_t n) {
    uint64_t h[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; ++l) {
            uint64_t w;
            std::memcpy(&w, p + i + 8 * l, 8);
            h[l] = mix(h[l], w);
        }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < n; ++k) tail |= uint64_t(p[i + k]) << (8 * (k % 8));
    return mix(mix(mix(mix(mix(h[0], h[1]), h[2]), h[3]), tail), n);
}

uint64_t checksum(const uint8_t* p, size_t n) {
    const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
    std::vector<uint64_t> sums(size_t(std::max<int64_t>(chunks, 1)), 0);
    parallel_for(chunks, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t c = b; c < e; ++c) {
            const size_t off = size_t(c) * kChunk;
            sums[size_t(c)] = chunk_sum(p + off, std::min<size_t>(kChunk, n - off));
        }
    });
    uint64_t h = 0x6A09E667F3BCC908ull;
    for (uint64_t s : sums) h = mix(h, s);
    return mix(h, n);
}

std::string hex(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
    return b;
}

// "size mtime_ns inode" of a file, or "-" when it does not exist.
std::string identity(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "-";
    return std::to_string((long long)st.st_size) + " " + std::to_string((long long)st.st_mtim.tv_sec) + "." +
           std::to_string((long long)st.st_mtim.tv_nsec) + " " + std::to_string((unsigned long long)st.st_ino);
}

std::string real_path(const std::string& path) {
    char buf[PATH_MAX];
    return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

bool read_all(int fd, void* dst, size_t n, uint64_t off) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
        const ssize_t r = ::pread(fd, p, std::min<size_t>(n, size_t(1) << 30), off_t(off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= size_t(r);
        off += uint64_t(r);
    }
    return true;
}

bool write_all(int fd, const void* src, size_t n, uint64_t off) {
    const auto* p = static_cast<const uint8_t*>(src);
    while (n > 0) {
        const ssize_t r = ::pwrite(fd, p, std::min<size_t>(n, size_t(1) << 30), off_t(off));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= size_t(r);
        off += uint64_t(r);
    }
    return true;
}

void mkdirs(const std::string& dir) {
    for (size_t i = 1; i <= dir.size(); ++i)
        if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);
}

// Little helpers to lay out the header as bytes.
struct Out {
    std::string b;
    template <class T>
    void put(T v) {
        b.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void str(const std::string& s) {
        put(uint32_t(s.size()));
        b += s;
    }
};
struct In {
    const std::string& b;
    size_t at = 0;
    bool ok = true;
    template <class T>
    T get() {
        T v{};
        if (at + sizeof v > b.size()) {
            ok = false;
            return v;
        }
        std::memcpy(&v, b.data() + at, sizeof v);
        at += sizeof v;
        return v;
    }
    std::string str(uint32_t max) {
        const uint32_t n = get<uint32_t>();
        if (!ok || n > max || at + n > b.size()) {
            ok = false;
            return {};
        }
        std::string s = b.substr(at, n);
        at += n;
        return s;
    }
};

}  // namespace

struct PackedCache::Entry {
    std::string name;
    int32_t format = 0, block = 0, kb = 0;
    int64_t out = 0, in = 0, ntiles = 0, tile_bytes = 0, scale_off = 0, min_off = 0;
    uint64_t tiles_off = 0, tiles_len = 0, rowmul_off = 0, rowmul_len = 0, sum = 0;
};

PackedCache::PackedCache(const std::string& dir, const Checkpoint& ck, vt_format format, int32_t block,
                         int64_t layers)
    : dir_(dir) {
    if (dir_.empty()) return;
    std::string paths;  // what names the load, but the cache version
    std::string key = "vtpack " + std::to_string(kVersion);
    for (const auto& f : ck.files()) {
        paths += "|" + real_path(f->path());
        key += "|" + real_path(f->path()) + " " + identity(f->path());
    }
    const std::string cfg_dir = ck.dir().empty() ? dirname_of(ck.files()[0]->path()) : ck.dir();
    for (const char* name : {"config.json", "generation_config.json"})
        key += "|" + std::string(name) + " " + identity(join_path(cfg_dir, name));
    const std::string opts = "|format " + std::to_string(int(format)) + " block " + std::to_string(block) + " layers " +
                             std::to_string((long long)layers);
    paths += opts;
    key_ = key + opts;
    source_ = hex(fnv1a("vtpack " + std::to_string(kVersion) + paths));
    // The same load's files of earlier cache versions: never read by this libvt, removed with
    // the stale ones when this load writes its file.
    for (uint32_t v = 1; v < kVersion; ++v) old_sources_.push_back(hex(fnv1a("vtpack " + std::to_string(v) + paths)));
    path_ = join_path(dir_, source_ + "-" + hex(fnv1a(key_)) + ".vtpack");
    enabled_ = true;
    hit_ = open_existing();
}

PackedCache::~PackedCache() {
    if (fd_ >= 0) ::close(fd_);
}

bool PackedCache::open_existing() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0) return false;
    struct stat st;
    bool ok = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    std::string head;
    uint64_t header_len = 0;
    if (ok) {
        char magic[8];
        uint32_t version = 0;
        ok = read_all(fd_, magic, 8, 0) && std::memcmp(magic, kMagic, 8) == 0 && read_all(fd_, &version, 4, 8) &&
             version == kVersion && read_all(fd_, &header_len, 8, 12) && header_len >= 28 &&
             header_len <= uint64_t(st.st_size) && header_len < (uint64_t(1) << 30);
    }
    if (ok) {
        head.resize(size_t(header_len) - 20);
        ok = read_all(fd_, head.data(), head.size(), 20);
    }
    if (ok) {
        // The header's own checksum is its last 8 bytes.
        In in{head};
        in.at = head.size() - 8;
        const uint64_t hsum = in.get<uint64_t>();
        ok = hsum == checksum(reinterpret_cast<const uint8_t*>(head.data()), head.size() - 8);
        in.at = 0;
        ok = ok && in.str(1 << 20) == key_;
        const uint32_t n = in.get<uint32_t>();
        ok = ok && in.ok && n <= kMaxEntries;
        for (uint32_t i = 0; ok && i < n; ++i) {
            Entry e;
            e.name = in.str(kMaxName);
            e.format = in.get<int32_t>();
            e.block = in.get<int32_t>();
            e.kb = in.get<int32_t>();
            e.out = in.get<int64_t>();
            e.in = in.get<int64_t>();
            e.ntiles = in.get<int64_t>();
            e.tile_bytes = in.get<int64_t>();
            e.scale_off = in.get<int64_t>();
            e.min_off = in.get<int64_t>();
            e.tiles_off = in.get<uint64_t>();
            e.tiles_len = in.get<uint64_t>();
            e.rowmul_off = in.get<uint64_t>();
            e.rowmul_len = in.get<uint64_t>();
            e.sum = in.get<uint64_t>();
            const uint64_t size = uint64_t(st.st_size);
            ok = in.ok && e.ntiles >= 0 && e.tile_bytes >= 0 && e.tiles_len == uint64_t(e.ntiles * e.tile_bytes) &&
                 e.scale_off >= 0 && e.scale_off <= e.tile_bytes && e.min_off >= 0 && e.min_off <= e.tile_bytes &&
                 (e.min_off == 0) == (e.format != VT_FORMAT_INT4_MIN_BLOCKED) &&
                 e.rowmul_len == uint64_t(e.ntiles) * 16 * sizeof(float) && e.tiles_off <= size &&
                 e.tiles_len <= size - e.tiles_off && e.rowmul_off <= size && e.rowmul_len <= size - e.rowmul_off;
            entries_.push_back(std::move(e));
        }
    }
    if (!ok) {
        entries_.clear();
        ::close(fd_);
        fd_ = -1;
    }
    return ok;
}

bool PackedCache::read_entry(const Entry& e, Packed& p) const {
    p.format = vt_format(e.format);
    p.block = e.block;
    p.out = e.out;
    p.in = e.in;
    p.kb = e.kb;
    p.ntiles = e.ntiles;
    p.tile_bytes = e.tile_bytes;
    p.scale_off = e.scale_off;
    p.min_off = e.min_off;
    p.tiles.allocate(size_t(e.tiles_len));
    p.rowmul.resize(size_t(e.ntiles) * 16);
    if (!read_all(fd_, p.tiles.data(), size_t(e.tiles_len), e.tiles_off) ||
        !read_all(fd_, p.rowmul.data(), size_t(e.rowmul_len), e.rowmul_off))
        return false;
    const uint64_t sum = mix(checksum(p.tiles.data(), size_t(e.tiles_len)),
                             checksum(reinterpret_cast<const uint8_t*>(p.rowmul.data()), size_t(e.rowmul_len)));
    return sum == e.sum;
}

std::unique_ptr<Packed> PackedCache::get(const std::string& name, int64_t out, int64_t in, vt_format format,
                                         int32_t block, const std::function<std::unique_ptr<Packed>()>& pack) {
    if (hit_ && !missed_ && next_ < entries_.size()) {
        const Entry& e = entries_[next_];
        if (e.name == name && e.out == out && e.in == in && e.format == int32_t(format) &&
            (block == 0 || e.block == block)) {
            auto p = std::make_unique<Packed>();
            if (read_entry(e, *p)) {
                ++next_;
                packed_.emplace_back(name, p.get());
                return p;
            }
        }
        missed_ = true;  // a bad entry: pack this and every later linear, rewrite the file
    } else if (hit_) {
        missed_ = true;
    }
    std::unique_ptr<Packed> p = pack();
    if (enabled_) packed_.emplace_back(name, p.get());
    return p;
}

void PackedCache::finish() {
    if (!enabled_) return;
    const bool complete_hit = hit_ && !missed_ && next_ == entries_.size();
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (!complete_hit) write_file();
    packed_.clear();
}

void PackedCache::write_file() {
    for (const auto& [name, p] : packed_)
        if (!p || !p->dense()) return;  // only the dense tiled formats are cached
    mkdirs(dir_);
    // The header: key, entries (offsets filled below), checksum.
    std::vector<Entry> es;
    uint64_t off = 0;
    for (const auto& [name, p] : packed_) {
        Entry e;
        e.name = name;
        e.format = int32_t(p->format);
        e.block = p->block;
        e.kb = p->kb;
        e.out = p->out;
        e.in = p->in;
        e.ntiles = p->ntiles;
        e.tile_bytes = p->tile_bytes;
        e.scale_off = p->scale_off;
        e.min_off = p->min_off;
        e.tiles_len = uint64_t(p->ntiles * p->tile_bytes);
        e.rowmul_len = uint64_t(p->rowmul.size() * sizeof(float));
        e.sum = mix(checksum(p->tiles.data(), size_t(e.tiles_len)),
                    checksum(reinterpret_cast<const uint8_t*>(p->rowmul.data()), size_t(e.rowmul_len)));
        es.push_back(e);
    }
    auto header = [&]() {
        Out o;
        o.str(key_);
        o.put(uint32_t(es.size()));
        for (const Entry& e : es) {
            o.str(e.name);
            o.put(e.format);
            o.put(e.block);
            o.put(e.kb);
            o.put(e.out);
            o.put(e.in);
            o.put(e.ntiles);
            o.put(e.tile_bytes);
            o.put(e.scale_off);
            o.put(e.min_off);
            o.put(e.tiles_off);
            o.put(e.tiles_len);
            o.put(e.rowmul_off);
            o.put(e.rowmul_len);
            o.put(e.sum);
        }
        return o.b;
    };
    const uint64_t header_len = 20 + header().size() + 8;
    off = (header_len + kAlign - 1) / kAlign * kAlign;
    for (Entry& e : es) {
        e.tiles_off = off;
        off = (off + e.tiles_len + kAlign - 1) / kAlign * kAlign;
        e.rowmul_off = off;
        off = (off + e.rowmul_len + kAlign - 1) / kAlign * kAlign;
    }
    Out o;
    o.b.append(kMagic, 8);
    o.put(kVersion);
    o.put(header_len);
    std::string h = header();
    h.resize(h.size() + 8);
    const uint64_t hsum = checksum(reinterpret_cast<const uint8_t*>(h.data()), h.size() - 8);
    std::memcpy(h.data() + h.size() - 8, &hsum, 8);
    o.b += h;

    char rnd[32];
    std::snprintf(rnd, sizeof rnd, "%ld.%lx", (long)::getpid(), (unsigned long)(std::time(nullptr) ^ uintptr_t(this)));
    const std::string tmp = path_ + ".tmp." + rnd;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    bool ok = write_all(fd, o.b.data(), o.b.size(), 0);
    for (size_t i = 0; ok && i < es.size(); ++i) {
        const Packed& p = *packed_[i].second;
        ok = write_all(fd, p.tiles.data(), size_t(es[i].tiles_len), es[i].tiles_off) &&
             write_all(fd, p.rowmul.data(), size_t(es[i].rowmul_len), es[i].rowmul_off);
    }
    // No fsync: after a crash a renamed file may hold stale pages, which its checksums catch
    // (it is then rebuilt); syncing a GB costs the first load seconds on slow disks.
    ok = ok && ::ftruncate(fd, off_t(off)) == 0;
    ok = (::close(fd) == 0) && ok;
    if (!ok || ::rename(tmp.c_str(), path_.c_str()) != 0) {
        ::unlink(tmp.c_str());
        return;
    }
    // Other files of this source are stale (another key), and temporary files of writers that
    // were interrupted long ago (an hour: a concurrent writer's is younger) are debris.
    if (DIR* d = ::opendir(dir_.c_str())) {
        const std::string mine = path_.substr(path_.rfind('/') + 1);
        while (dirent* ent = ::readdir(d)) {
            const std::string n = ent->d_name;
            const auto of = [&](const std::string& src) { return n.compare(0, src.size() + 1, src + "-") == 0; };
            if (n == mine || !(of(source_) || std::any_of(old_sources_.begin(), old_sources_.end(), of))) continue;
            const std::string full = join_path(dir_, n);
            if (n.find(".tmp.") != std::string::npos) {
                struct stat st;
                if (::stat(full.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime < 3600) continue;
            }
            ::unlink(full.c_str());
        }
        ::closedir(d);
    }
}

}  // namespace vt
