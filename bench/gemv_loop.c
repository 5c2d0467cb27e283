/* A decode GEMV in a loop through the C ABI (no Python per call): vt_linear with m = 1 over
 * `copies` packed copies of one random [out, in] weight, so a large copy count streams the
 * weights from DRAM and 1 keeps them in cache. Prints the best and median (of 9 timed passes
 * of `iters` calls, after 7 warm-up passes) time per call and GB/s of packed bytes.
 *
 *   cc -O2 bench/gemv_loop.c -Ilibvt/include -L<dir of libvt.so> -lvt -Wl,-rpath,<dir> -o gemv_loop
 *   ./gemv_loop FORMAT OUT IN COPIES ITERS [THREADS]      FORMAT: vt_format number (3 INT8_BLOCKED,
 *                                                          7 INT4_BLOCKED, 8 INT4_MIN_BLOCKED)
 * e.g. ./gemv_loop 3 1536 576 300 300 2 (int8, SmolLM2's gate/up shape, ~300 MB: from DRAM).
 * Ad hoc: alternate builds or formats by hand in the same minutes (the host's bandwidth drifts). */
#include <vt/vt.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s FORMAT OUT IN COPIES ITERS [THREADS]\n", argv[0]);
        return 2;
    }
    const int fmt = atoi(argv[1]), copies = atoi(argv[4]), iters = atoi(argv[5]);
    const long out = atol(argv[2]), in = atol(argv[3]);
    if (out < 1 || in < 1 || copies < 1 || iters < 1) {
        fprintf(stderr, "OUT, IN, COPIES and ITERS must be >= 1\n");
        return 2;
    }
    if (argc > 6) vt_set_num_threads(atoi(argv[6]));
    float* w = malloc(sizeof(float) * out * in);
    float* x = malloc(sizeof(float) * in);
    float* y = malloc(sizeof(float) * out);
    vt_packed** p = calloc(copies, sizeof(vt_packed*));
    if (!w || !x || !y || !p) return 1;
    srand(1);
    for (long i = 0; i < out * in; i++) w[i] = rand() / (float)RAND_MAX - 0.5f;
    for (long i = 0; i < in; i++) x[i] = rand() / (float)RAND_MAX - 0.5f;
    vt_prepack_options o = vt_prepack_default_options();
    o.format = fmt;
    for (int c = 0; c < copies; c++)
        if (vt_prepack(w, VT_DTYPE_F32, out, in, &o, &p[c]) != 0) { /* VT_STATUS_OK */
            fprintf(stderr, "vt_prepack failed: %s\n", vt_last_error());
            return 1;
        }
    vt_packed_info info = VT_INFO_INIT(vt_packed_info);
    vt_packed_get_info(p[0], &info);
    vt_linear_options lo = vt_linear_default_options();
    double ts[9], best = 1e9;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) vt_linear(p[i % copies], x, 1, NULL, &lo, y);
        double t = (now() - t0) / iters;
        if (t < best) best = t;
    }
    for (int r = 0; r < 9; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) vt_linear(p[i % copies], x, 1, NULL, &lo, y);
        ts[r] = (now() - t0) / iters;
        if (ts[r] < best) best = ts[r];
    }
    qsort(ts, 9, sizeof ts[0], cmp);
    printf("format %d [%ld x %ld], %d copies, %d threads: best %.2f us %.1f GB/s, median %.2f us %.1f GB/s\n", fmt,
           out, in, copies, vt_get_num_threads(), best * 1e6, info.nbytes / best / 1e9, ts[4] * 1e6,
           info.nbytes / ts[4] / 1e9);
    for (int c = 0; c < copies; c++) vt_packed_free(p[c]);
    free(p), free(w), free(x), free(y);
    return 0;
}
