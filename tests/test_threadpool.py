"""libvt's thread pool (libvt/src/threadpool.cpp): tests/ops/test_threadpool.cpp, compiled here with
the pool's one source file and run, then again under ThreadSanitizer where the compiler has it
(the work-stealing claims of parallel_for_balanced are lock-free). meson builds the same program
as vt_test_threadpool (`meson test threadpool`)."""

from __future__ import annotations

import pytest

from native_selftest import CXX, ROOT, build_run_check, build_run_check_sanitized

SOURCES = [ROOT / "tests" / "ops" / "test_threadpool.cpp", ROOT / "libvt" / "src" / "threadpool.cpp"]
CHECKS = ("balanced threads=8 n=4099 grain=16: every item exactly once",
          "parallel_for threads=3 n=7 grain=3: every item exactly once",
          "balanced: another thread ran items of a share whose owner was held up",
          "balanced: an exception in a range reaches the caller",
          "nested balanced regions run every item",
          "regions from 3 threads while the thread count changes")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_threadpool(tmp_path):
    build_run_check(tmp_path, "test_threadpool", SOURCES, CHECKS)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_threadpool_under_thread_sanitizer(tmp_path):
    build_run_check_sanitized(tmp_path, "test_threadpool_tsan", SOURCES, CHECKS, "thread")
