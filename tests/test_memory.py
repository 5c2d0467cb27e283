"""libvt's weight memory (libvt/src/memory.cpp: the huge-page arena of packed weights):
tests/ops/test_memory.cpp, compiled here with that one source file and run, then again under
AddressSanitizer + UBSan and ThreadSanitizer where the compiler has them (the arena is shared by
every model, and packing threads allocate from it at once). meson builds the same program as
vt_test_memory (`meson test memory`)."""

from __future__ import annotations

import pytest

from native_selftest import CXX, ROOT, build_run_check, build_run_check_sanitized

SOURCES = [ROOT / "tests" / "ops" / "test_memory.cpp", ROOT / "libvt" / "src" / "memory.cpp"]
CHECKS = ("the arena starts empty",
          "every buffer is 64-byte aligned",
          "the arena handed out exactly their 64-byte rounded sizes",
          "each small buffer follows the one before it",
          "no two buffers overlap",
          "freeing buffers leaves the others intact",
          "every chunk is given back once its last buffer is freed",
          "4 threads allocating and freeing at once: no buffer overlaps another",
          "after the threads, every chunk is given back",
          "alloc_huge_pages is 2 MB aligned",
          "alloc_buffer: 64-byte aligned below 4 MB",
          "alloc_weights that cannot be met throws std::bad_alloc")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_memory(tmp_path):
    build_run_check(tmp_path, "test_memory", SOURCES, CHECKS)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_memory_under_sanitizer(tmp_path, sanitizer):
    build_run_check_sanitized(tmp_path, "test_memory_" + sanitizer.split(",")[0], SOURCES, CHECKS, sanitizer)
