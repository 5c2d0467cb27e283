/* What the C tests share (C99, header only; include after vt/vt.h): pass / fail counters,
 * CHECK(cond, printf-args...) which reports a failure with its place and vt_last_error(),
 * check_summary() for main's exit status, and nrand(), deterministic pseudo-normal numbers
 * (sum of 12 uniforms of a 64-bit LCG; no libc rand()), seeded by CHECK_SEED when a test
 * defines it before the include. */
#ifndef VT_TESTS_C_CHECK_H
#define VT_TESTS_C_CHECK_H

#include <stdio.h>

#ifndef CHECK_SEED
#define CHECK_SEED 12345ULL
#endif

static int g_pass = 0, g_fail = 0;

#define CHECK(cond, ...)                                            \
    do {                                                            \
        if (cond) {                                                 \
            ++g_pass;                                               \
        } else {                                                    \
            ++g_fail;                                               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);             \
            printf(__VA_ARGS__);                                    \
            printf(" (last error: %s)\n", vt_last_error());         \
        }                                                           \
    } while (0)

/* Prints "N passed, M failed"; returns main's exit status. */
static inline int check_summary(void) {
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

static inline float nrand(void) {
    static unsigned long long state = CHECK_SEED;
    double s = 0;
    int i;
    for (i = 0; i < 12; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        s += (double)(state >> 11) / 9007199254740992.0;
    }
    return (float)(s - 6.0);
}

#endif
