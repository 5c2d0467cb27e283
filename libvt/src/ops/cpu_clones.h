// Shared by the CPU ops' .cpp files and cpu/engine.cpp: libvt's own objects are built for baseline x86-64, so the
// small ops are compiled for three ISA levels (target_clones) and FMA contraction is turned
// back on (-std=c++17 turns it off; it is also more accurate). Include last, in .cpp files only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define VT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VT_CLONES
#endif
