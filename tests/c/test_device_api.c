/* C99 test of the device-resident inference API (vt_linear_device, vt_linear_swiglu_device,
 * vt_device_alloc / free / copy, vt_prepack with device CUDA / AUTO). Of libvt, includes only vt.h.
 *
 * Everywhere: the host-observable behaviour. A CPU weight handed to vt_linear_device is
 * VT_STATUS_INVALID_ARGUMENT with a message; without a usable GPU (no CUDA in the build, no
 * driver, no device) vt_prepack with device CUDA and vt_device_alloc / vt_device_copy are
 * VT_STATUS_BACKEND_UNAVAILABLE naming the reason, and device AUTO packs on the CPU.
 * With a usable GPU (vt_cuda_available()): every dense format on the device against the CPU
 * handle of the same weight, through vt_linear (host arrays) and vt_linear_device (device
 * arrays, default stream), the fused SwiGLU, W8A8 input rounding, and device-pointer checks.
 * Exit status != 0 on any failure; prints "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt/vt.h"

#define CHECK_SEED 777ULL
#include "check.h"

/* max |a - b| / max |b| */
static double nerr(const float* a, const float* b, int n) {
    double d = 0, s = 0;
    int i;
    for (i = 0; i < n; ++i) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d)) d = e; /* NaN propagates */
        if (fabs((double)b[i]) > s) s = fabs((double)b[i]);
    }
    return s > 0 ? d / s : d;
}

static int contains(const char* s, const char* sub) { return s != NULL && strstr(s, sub) != NULL; }

/* The build has CUTLASS's 2:4 sparse GEMM (vt_backend_info's "cutlass: built (2:4 sparse ...)"):
 * then the 2:4 sparse formats live on the GPU too, else they stay on the CPU. */
static int sparse_on_gpu_built(void) {
    const char* line = strstr(vt_backend_info(), "cutlass: built (");
    return line != NULL && contains(line, "2:4 sparse");
}

/* ---- everywhere ------------------------------------------------------------------------- */

static void test_cpu_weight_refused(void) {
    enum { OUT = 8, IN = 32 };
    float w[OUT * IN], x[IN], y[OUT];
    vt_packed *p = NULL, *q = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    vt_packed_info info = VT_INFO_INIT(vt_packed_info);
    int i;
    for (i = 0; i < OUT * IN; ++i) w[i] = 0.1f * nrand();
    for (i = 0; i < IN; ++i) x[i] = nrand();

    CHECK(po.device == VT_DEVICE_CPU, "default device is CPU (%d)", po.device);
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_OK, "prepack: %s", vt_last_error());
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &q) == VT_OK, "prepack: %s", vt_last_error());
    CHECK(vt_packed_get_info(p, &info) == VT_OK && info.device == VT_DEVICE_CPU && info.device_index == 0,
          "CPU info");
    /* Host arrays are fine pointers to test with: the CPU-weight check comes first. */
    CHECK(vt_linear_device(p, x, 1, NULL, NULL, y, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "vt_linear_device") && contains(vt_last_error(), "on the CPU"),
          "linear_device with a CPU weight: '%s'", vt_last_error());
    CHECK(vt_linear_swiglu_device(p, q, x, 1, NULL, NULL, NULL, y, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "vt_linear_swiglu_device") && contains(vt_last_error(), "on the CPU"),
          "swiglu_device with CPU weights: '%s'", vt_last_error());
    CHECK(vt_linear_device(NULL, x, 1, NULL, NULL, y, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "NULL"),
          "linear_device NULL w: '%s'", vt_last_error());
    CHECK(vt_linear_swiglu_device(p, NULL, x, 1, NULL, NULL, NULL, y, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "up"),
          "swiglu_device NULL up: '%s'", vt_last_error());
    /* The host path still works after the refusals. */
    CHECK(vt_linear(p, x, 1, NULL, NULL, y) == VT_OK && strlen(vt_last_error()) == 0, "host linear");
    vt_packed_free(p);
    vt_packed_free(q);
}

static void test_prepack_device_options(void) {
    enum { OUT = 8, IN = 32 };
    float w[OUT * IN];
    vt_packed* p = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    vt_packed_info info = VT_INFO_INIT(vt_packed_info);
    int i;
    for (i = 0; i < OUT * IN; ++i) w[i] = 0.1f * nrand();

    po.device = 7;
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_STATUS_INVALID_ARGUMENT && p == NULL &&
              contains(vt_last_error(), "device 7"),
          "bad device: '%s'", vt_last_error());
    po.device = VT_DEVICE_CUDA;
    po.device_index = -1;
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_STATUS_INVALID_ARGUMENT && p == NULL &&
              contains(vt_last_error(), "device_index"),
          "negative device_index: '%s'", vt_last_error());

    /* AUTO: the GPU when one can be used, else the CPU; 2:4 sparse formats go to the GPU only
     * when the build has CUTLASS's sparse GEMM. */
    po.device = VT_DEVICE_AUTO;
    po.device_index = 0;
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_OK && p != NULL, "AUTO: %s", vt_last_error());
    if (p) {
        CHECK(vt_packed_get_info(p, &info) == VT_OK &&
                  info.device == (vt_cuda_available() ? VT_DEVICE_CUDA : VT_DEVICE_CPU),
              "AUTO device %d (cuda available %d)", info.device, vt_cuda_available());
        vt_packed_free(p);
        p = NULL;
    }
    po.format = VT_FORMAT_INT8_SPARSE24;
    CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_OK && p != NULL, "AUTO sparse: %s",
          vt_last_error());
    if (p) {
        int want = vt_cuda_available() && sparse_on_gpu_built() ? VT_DEVICE_CUDA : VT_DEVICE_CPU;
        CHECK(vt_packed_get_info(p, &info) == VT_OK && info.device == want, "AUTO sparse on device %d, not %d",
              info.device, want);
        vt_packed_free(p);
        p = NULL;
    }
    po.format = VT_FORMAT_INT8_BLOCKED;

    if (!vt_cuda_available()) {
        po.device = VT_DEVICE_CUDA;
        CHECK(vt_prepack(w, VT_DTYPE_F32, OUT, IN, &po, &p) == VT_STATUS_BACKEND_UNAVAILABLE && p == NULL &&
                  contains(vt_last_error(), "cuda:0 was requested, but ") &&
                  strlen(strstr(vt_last_error(), "but ")) > 8,
              "CUDA without a GPU: '%s'", vt_last_error());
    }
}

static void test_device_memory_without_gpu(void) {
    void* ptr = (void*)&g_pass;
    float h[4] = {1, 2, 3, 4};
    CHECK(vt_device_alloc(0, 64, NULL) == VT_STATUS_INVALID_ARGUMENT, "alloc NULL ptr");
    CHECK(vt_device_alloc(-1, 64, &ptr) == VT_STATUS_INVALID_ARGUMENT && contains(vt_last_error(), "device_index"),
          "alloc negative device: '%s'", vt_last_error());
    CHECK(vt_device_copy(0, h, h, sizeof h, 3, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "kind 3"),
          "copy bad kind: '%s'", vt_last_error());
    CHECK(vt_device_copy(0, h, h, 0, VT_COPY_HOST_TO_DEVICE, NULL) == VT_OK, "copy of 0 bytes is a no-op");
    vt_device_free(0, NULL); /* no-op */
    if (vt_cuda_available()) return;
    ptr = NULL;
    CHECK(vt_device_alloc(0, 64, &ptr) == VT_STATUS_BACKEND_UNAVAILABLE && ptr == NULL &&
              strlen(vt_last_error()) > 0,
          "alloc without a GPU: '%s'", vt_last_error());
    CHECK(vt_device_copy(0, h, h, sizeof h, VT_COPY_HOST_TO_DEVICE, NULL) == VT_STATUS_BACKEND_UNAVAILABLE,
          "copy without a GPU: '%s'", vt_last_error());
    vt_device_free(0, h); /* cannot be device memory here: must not crash */
}

/* ---- with a GPU ------------------------------------------------------------------------- */

static void* dev_upload(const float* h, int n) {
    void* d = NULL;
    if (vt_device_alloc(0, sizeof(float) * (size_t)n, &d) != VT_OK) return NULL;
    if (vt_device_copy(0, d, h, sizeof(float) * (size_t)n, VT_COPY_HOST_TO_DEVICE, NULL) != VT_OK) {
        vt_device_free(0, d);
        return NULL;
    }
    return d;
}

static void gpu_format(int format, int out, int in, int m) {
    float *w = malloc(sizeof(float) * out * in), *wu = malloc(sizeof(float) * out * in);
    float *u1 = malloc(sizeof(float) * out * in), *u2 = malloc(sizeof(float) * out * in);
    float *x = malloc(sizeof(float) * m * in), *b = malloc(sizeof(float) * out);
    float *yc = malloc(sizeof(float) * m * out), *yg = malloc(sizeof(float) * m * out);
    float *yd = malloc(sizeof(float) * m * out);
    vt_prepack_options po = vt_prepack_default_options();
    vt_linear_options lo = vt_linear_default_options();
    vt_packed *pc = NULL, *pg = NULL, *uc = NULL, *ug = NULL;
    vt_packed_info info = VT_INFO_INIT(vt_packed_info);
    void *dx = NULL, *dy = NULL, *db = NULL;
    int i, q;
    for (i = 0; i < out * in; ++i) w[i] = 0.05f * nrand(), wu[i] = 0.05f * nrand();
    for (i = 0; i < m * in; ++i) x[i] = nrand();
    for (i = 0; i < out; ++i) b[i] = 0.1f * nrand();

    po.format = format;
    CHECK(vt_prepack(w, VT_DTYPE_F32, out, in, &po, &pc) == VT_OK, "cpu prepack: %s", vt_last_error());
    CHECK(vt_prepack(wu, VT_DTYPE_F32, out, in, &po, &uc) == VT_OK, "cpu prepack: %s", vt_last_error());
    po.device = VT_DEVICE_CUDA;
    CHECK(vt_prepack(w, VT_DTYPE_F32, out, in, &po, &pg) == VT_OK, "cuda prepack: %s", vt_last_error());
    CHECK(vt_prepack(wu, VT_DTYPE_F32, out, in, &po, &ug) == VT_OK, "cuda prepack: %s", vt_last_error());
    dx = dev_upload(x, m * in);
    db = dev_upload(b, out);
    CHECK(vt_device_alloc(0, sizeof(float) * (size_t)(m * out), &dy) == VT_OK, "alloc: %s", vt_last_error());
    if (!pc || !pg || !uc || !ug || !dx || !db || !dy) goto done;

    CHECK(vt_packed_get_info(pg, &info) == VT_OK && info.device == VT_DEVICE_CUDA && info.device_index == 0,
          "format %d: device info", format);
    CHECK(vt_packed_unpack(pc, u1) == VT_OK && vt_packed_unpack(pg, u2) == VT_OK &&
              memcmp(u1, u2, sizeof(float) * out * in) == 0,
          "format %d: unpack of the device handle equals the CPU one", format);

    for (q = 0; q < 2; ++q) {
        lo.quantize_input = q;
        CHECK(vt_linear(pc, x, m, b, &lo, yc) == VT_OK, "cpu linear: %s", vt_last_error());
        CHECK(vt_linear(pg, x, m, b, &lo, yg) == VT_OK, "cuda linear (host arrays): %s", vt_last_error());
        CHECK(nerr(yg, yc, m * out) < 2e-3, "format %d m %d q %d: host arrays nerr %g", format, m, q,
              nerr(yg, yc, m * out));
        CHECK(vt_linear_device(pg, dx, m, db, &lo, dy, NULL) == VT_OK, "linear_device: %s", vt_last_error());
        CHECK(vt_device_copy(0, yd, dy, sizeof(float) * (size_t)(m * out), VT_COPY_DEVICE_TO_HOST, NULL) == VT_OK,
              "copy back: %s", vt_last_error());
        CHECK(nerr(yd, yc, m * out) < 2e-3, "format %d m %d q %d: device arrays nerr %g", format, m, q,
              nerr(yd, yc, m * out));
    }
    lo.quantize_input = 0;
    CHECK(vt_linear_swiglu(pc, uc, x, m, b, NULL, &lo, yc) == VT_OK, "cpu swiglu: %s", vt_last_error());
    CHECK(vt_linear_swiglu_device(pg, ug, dx, m, db, NULL, &lo, dy, NULL) == VT_OK,
          "swiglu_device: %s", vt_last_error());
    CHECK(vt_device_copy(0, yd, dy, sizeof(float) * (size_t)(m * out), VT_COPY_DEVICE_TO_HOST, NULL) == VT_OK,
          "copy back: %s", vt_last_error());
    CHECK(nerr(yd, yc, m * out) < 2e-3, "format %d m %d: swiglu nerr %g", format, m, nerr(yd, yc, m * out));

    /* Device pointers are checked, naming the argument. */
    CHECK(vt_linear_device(pg, x, m, NULL, NULL, dy, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "x ("),
          "host x: '%s'", vt_last_error());
    CHECK(vt_linear_device(pg, dx, m, b, NULL, dy, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "bias ("),
          "host bias: '%s'", vt_last_error());
    CHECK(vt_linear_device(pg, dx, m, NULL, NULL, yd, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "y ("),
          "host y: '%s'", vt_last_error());
    CHECK(vt_linear_swiglu_device(pg, uc, dx, m, NULL, NULL, NULL, dy, NULL) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "same device"),
          "mixed devices: '%s'", vt_last_error());
    CHECK(vt_linear_swiglu(pg, uc, x, m, NULL, NULL, NULL, yc) == VT_STATUS_INVALID_ARGUMENT &&
              contains(vt_last_error(), "same device"),
          "mixed devices (host arrays): '%s'", vt_last_error());

done:
    vt_device_free(0, dx);
    vt_device_free(0, dy);
    vt_device_free(0, db);
    vt_packed_free(pc);
    vt_packed_free(pg);
    vt_packed_free(uc);
    vt_packed_free(ug);
    free(w), free(wu), free(u1), free(u2), free(x), free(b), free(yc), free(yg), free(yd);
}

static void gpu_misc(void) {
    float w[8 * 32];
    vt_packed* p = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    void* d = NULL;
    int i;
    for (i = 0; i < 8 * 32; ++i) w[i] = 0.1f * nrand();
    po.device = VT_DEVICE_CUDA;
    po.format = VT_FORMAT_INT4_SPARSE24;
    if (sparse_on_gpu_built()) {
        vt_packed_info info = VT_INFO_INIT(vt_packed_info);
        CHECK(vt_prepack(w, VT_DTYPE_F32, 8, 32, &po, &p) == VT_OK && p != NULL &&
                  vt_packed_get_info(p, &info) == VT_OK && info.device == VT_DEVICE_CUDA,
              "2:4 sparse on CUDA (CUTLASS built): '%s'", vt_last_error());
    } else {
        CHECK(vt_prepack(w, VT_DTYPE_F32, 8, 32, &po, &p) == VT_STATUS_UNSUPPORTED && p == NULL,
              "2:4 sparse on CUDA without CUTLASS: '%s'", vt_last_error());
    }
    vt_packed_free(p);
    p = NULL;
    po.format = VT_FORMAT_INT8_BLOCKED;
    po.device_index = 4096;
    CHECK(vt_prepack(w, VT_DTYPE_F32, 8, 32, &po, &p) == VT_STATUS_BACKEND_UNAVAILABLE && p == NULL &&
              contains(vt_last_error(), "cuda:4096"),
          "missing device: '%s'", vt_last_error());
    CHECK(vt_device_alloc(0, 0, &d) == VT_OK && d != NULL, "alloc 0 bytes: %s", vt_last_error());
    vt_device_free(0, d);
    d = NULL;
    CHECK(vt_device_alloc(4096, 16, &d) == VT_STATUS_BACKEND_UNAVAILABLE && d == NULL, "alloc on a missing device");
}

int main(void) {
    static const int formats[4] = {VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_FP8_CHANNEL,
                                   VT_FORMAT_BF16};
    static const int ms[4] = {1, 3, 17, 70};
    int f, j;
    printf("%s\n", vt_backend_info());
    test_cpu_weight_refused();
    test_prepack_device_options();
    test_device_memory_without_gpu();
    if (vt_cuda_available()) {
        for (f = 0; f < 4; ++f)
            for (j = 0; j < 4; ++j) gpu_format(formats[f], 40, 96, ms[j]);
        gpu_misc();
    } else {
        printf("no usable CUDA device: the GPU checks were skipped\n");
    }
    return check_summary();
}
