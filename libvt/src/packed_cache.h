// The packed-weight cache (vt_model_options.packed_cache_dir): a model's prepacked linears
// kept on disk, so a second load of the same checkpoint in the same format reads them instead
// of quantizing again.
//
// One file per (checkpoint, format, block size, loaded layers): DIR/<source>-<key>.vtpack,
// where <source> hashes what names the load (the checkpoint's real path, format, block size,
// layers) and <key> everything the packed bytes depend on (libvt's cache version, every
// checkpoint file's size, mtime and inode, config.json and generation_config.json). A load
// whose key differs writes a new file and removes the other files of the same source (stale),
// and those of the same load under earlier cache versions (which this libvt never reads).
//
// Safety: the file is written to a unique temporary name, then renamed into place
// (concurrent writers each rename a complete file: the last one wins, readers never see half a
// file); an interrupted write leaves only a temporary file, removed by the next writer of that
// source. A reader checks the magic, version, key, the table against the file size, each
// linear's shape / format against what the load expects, and a 64-bit checksum of every
// linear's bytes; any mismatch means the cache is not used (and is rewritten after packing).
// The linears are read (pread) into the model's own memory, not mapped: a mapped cache file
// truncated by another process would fault inside a decode kernel long after the load.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quant.h"
#include "safetensors.h"

namespace vt {

class PackedCache {
public:
    // dir: the cache folder (created if absent); empty = no cache (every call packs).
    PackedCache(const std::string& dir, const Checkpoint& ck, vt_format format, int32_t block, int64_t layers);
    ~PackedCache();

    // True when a valid cache file for this load was found (its linears are read by get()).
    bool hit() const { return hit_; }

    // The linear `name` ([out, in] in `format`, K-block `block`): read from the cache on a hit
    // (falls back to pack() if that entry does not match), else pack() and remember it.
    std::unique_ptr<Packed> get(const std::string& name, int64_t out, int64_t in, vt_format format, int32_t block,
                                const std::function<std::unique_ptr<Packed>()>& pack);

    // After every get(): writes the cache file when this load packed (a miss). Failures to
    // write (read-only folder, disk full) are not errors: the model is loaded all the same.
    void finish();

private:
    struct Entry;
    bool read_entry(const Entry& e, Packed& p) const;
    bool open_existing();
    void write_file();

    std::string dir_, source_, key_, path_;
    std::vector<std::string> old_sources_;  // this load's <source> under earlier cache versions
    bool enabled_ = false, hit_ = false, missed_ = false;
    int fd_ = -1;
    std::vector<Entry> entries_;                                // of the file read (hit)
    std::vector<std::pair<std::string, const Packed*>> packed_;  // this load's, in order
    size_t next_ = 0;
};

}  // namespace vt
