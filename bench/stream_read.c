/* A plain streaming read of a large buffer by N threads (AVX2 loads, optional software
 * prefetch D bytes ahead and a little integer work per 64 bytes): what a simple loop reaches
 * from DRAM on this machine, to hold a GEMV's or the bandwidth probe's GB/s against.
 *
 *   cc -O2 -mavx2 -pthread bench/stream_read.c -o stream_read
 *   ./stream_read MB D WORK [HINT 0=T0 1=T1 2=NTA] [THREADS]   e.g. ./stream_read 512 0 0
 * Prints the best and median of 7 passes. Ad hoc: alternate with the program it is compared to. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static size_t N; static uint8_t* buf; static long D; static int work; static int hint;
static volatile long sink;
typedef struct { size_t b, e; long r; } arg_t;
static void* run(void* p) {
    arg_t* a = p; __m256i acc = _mm256_setzero_si256(), acc2 = acc; const __m256i ones = _mm256_set1_epi16(1);
    for (size_t i = a->b; i < a->e; i += 64) {
        if (D) { if (hint == 0) _mm_prefetch((const char*)buf + i + D, _MM_HINT_T0);
                 else if (hint == 1) _mm_prefetch((const char*)buf + i + D, _MM_HINT_T1);
                 else _mm_prefetch((const char*)buf + i + D, _MM_HINT_NTA); }
        __m256i x = _mm256_load_si256((const __m256i*)(buf + i)), y = _mm256_load_si256((const __m256i*)(buf + i + 32));
        if (work) {
            for (int w = 0; w < work; ++w) {
                __m256i xl = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(x));
                __m256i yl = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(y));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xl, ones));
                acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(yl, ones));
                x = _mm256_alignr_epi8(x, x, 1); y = _mm256_alignr_epi8(y, y, 1);
            }
        } else { acc = _mm256_add_epi64(acc, x); acc2 = _mm256_add_epi64(acc2, y); }
    }
    acc = _mm256_add_epi64(acc, acc2);
    a->r = _mm256_extract_epi64(acc, 0) + _mm256_extract_epi64(acc, 2);
    return 0;
}
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MB D WORK [HINT] [THREADS]\n", argv[0]);
        return 2;
    }
    N = (size_t)atol(argv[1]) << 20; D = atol(argv[2]); work = atoi(argv[3]); hint = argc > 4 ? atoi(argv[4]) : 0;
    int T = argc > 5 ? atoi(argv[5]) : 2;
    if (N == 0 || D < 0 || work < 0 || T < 1 || T > 4) {
        fprintf(stderr, "error: MB > 0, D >= 0, WORK >= 0 and 1 <= THREADS <= 4\n");
        return 2;
    }
    buf = aligned_alloc(4096, N + 65536); memset(buf, 1, N + 65536);
    double best = 1e9; double all[7];
    for (int rep = 0; rep < 7; ++rep) {
        pthread_t th[4]; arg_t a[4];
        double t0 = now();
        for (int t = 0; t < T; ++t) { a[t].b = N / T * t; a[t].e = N / T * (t + 1); pthread_create(&th[t], 0, run, &a[t]); }
        for (int t = 0; t < T; ++t) { pthread_join(th[t], 0); sink += a[t].r; }
        double dt = now() - t0; all[rep] = dt; if (dt < best) best = dt;
    }
    // median
    for (int i = 0; i < 7; ++i) for (int j = i + 1; j < 7; ++j) if (all[j] < all[i]) { double t = all[i]; all[i] = all[j]; all[j] = t; }
    printf("MB %zu D %ld work %d hint %d T %d: best %.1f GB/s median %.1f GB/s\n", N >> 20, D, work, hint, T, N / best / 1e9, N / all[3] / 1e9);
    return 0;
}
