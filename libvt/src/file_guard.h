// Survives a file mapping whose file shrinks underneath it. Reading a page of a shared file
// mapping past the file's (new) end raises SIGBUS, which kills the process by default; a
// model file truncated or rewritten by another process while libvt loads it must instead
// give an error naming the file.
//
// A mapping registered here is guarded: a SIGBUS whose address lies inside it replaces the
// missing pages (from the faulting one to the end of the mapping) with zero pages and marks
// the mapping as faulted; the reading code continues on zeros, and the loader checks
// faulted() before it trusts what it read (and reports the file as changed). Reads from any
// thread are covered (the thread pool copies and prepacks from the mapping), with no change
// to the reading code. Faults outside every guarded mapping go to the handler that was there
// before (or kill the process as they would have).
//
// The SIGBUS handler is installed while at least one mapping is registered and the previous
// handler is restored when the last one goes (unless someone else replaced ours meanwhile).
#pragma once

#include <cstddef>

namespace vt {

// Registers [base, base + len); returns a slot for the calls below, or -1 when the table is
// full (the mapping is then unguarded: it still works, a truncation is then fatal as before).
int guard_mapping(const void* base, size_t len);
// Whether a SIGBUS hit the mapping of `slot` (false for -1).
bool guard_faulted(int slot);
// Unregisters `slot` (no-op for -1); call before unmapping.
void unguard_mapping(int slot);

}  // namespace vt
