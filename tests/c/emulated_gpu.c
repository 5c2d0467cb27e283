/* LD_PRELOAD shim for tests/test_device_api.py::test_python_side_on_an_emulated_gpu: pretends
 * a GPU exists so that pyvt's Python side of the device API (DeviceArray, device inputs,
 * shapes, strides, streams, out=, bias upload, lifetimes) runs in CI. "Device memory" is host
 * malloc (filled with NaN bytes, so unwritten results show), a "CUDA" packed weight is a CPU
 * one remembered here, and the device linears call the CPU ones. libvt's CUDA code itself is
 * not involved: tests/c/test_device_api.c and the `cuda` tests cover it on a GPU.
 * Linux (glibc) only: the shim finds the libvt that pyvt loaded with dl_iterate_phdr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "vt/vt.h"

static int find_libvt(struct dl_phdr_info* info, size_t size, void* data) {
    const char* base = strrchr(info->dlpi_name, '/');
    (void)size;
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libvt.so", 8) == 0 && !*(const char**)data) *(const char**)data = info->dlpi_name;
    return 0;
}

static void* sym(const char* name) {
    static void* h;
    void* f;
    if (!h) {
        const char* path = NULL;
        dl_iterate_phdr(find_libvt, &path);
        if (path) h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) abort();
    }
    f = dlsym(h, name);
    if (!f) abort();
    return f;
}

#define MAXH 4096
static const vt_packed* g_dev[MAXH];
static int is_dev(const vt_packed* p) {
    int i;
    for (i = 0; i < MAXH; ++i)
        if (p && g_dev[i] == p) return 1;
    return 0;
}
static void remember(const vt_packed* p) {
    int i;
    for (i = 0; i < MAXH; ++i)
        if (!g_dev[i]) {
            g_dev[i] = p;
            return;
        }
    abort();
}

int vt_cuda_available(void) { return 1; }

vt_status vt_prepack(const void* w, vt_dtype dtype, int64_t out_features, int64_t in_features,
                     const vt_prepack_options* options, vt_packed** out) {
    vt_status (*real)(const void*, vt_dtype, int64_t, int64_t, const vt_prepack_options*, vt_packed**) =
        (vt_status(*)(const void*, vt_dtype, int64_t, int64_t, const vt_prepack_options*, vt_packed**))sym("vt_prepack");
    vt_prepack_options o = *options;
    int sparse = o.format == VT_FORMAT_INT8_SPARSE24 || o.format == VT_FORMAT_INT4_SPARSE24;
    int dev = o.device == VT_DEVICE_CUDA || (o.device == VT_DEVICE_AUTO && !sparse);
    vt_status st;
    if (o.device == VT_DEVICE_CUDA && sparse) return real(w, dtype, out_features, in_features, &o, out);
    o.device = VT_DEVICE_CPU;
    st = real(w, dtype, out_features, in_features, &o, out);
    if (st == VT_OK && dev) remember(*out);
    return st;
}

void vt_packed_free(vt_packed* p) {
    int i;
    for (i = 0; i < MAXH; ++i)
        if (p && g_dev[i] == p) g_dev[i] = NULL;
    ((void (*)(vt_packed*))sym("vt_packed_free"))(p);
}

vt_status vt_packed_get_info(const vt_packed* p, vt_packed_info* info) {
    vt_status st = ((vt_status(*)(const vt_packed*, vt_packed_info*))sym("vt_packed_get_info"))(p, info);
    if (st == VT_OK && is_dev(p)) {
        info->device = VT_DEVICE_CUDA;
        info->device_index = 0;
    }
    return st;
}

vt_status vt_device_alloc(int32_t d, size_t bytes, void** ptr) {
    (void)d;
    *ptr = malloc(bytes ? bytes : 1);
    memset(*ptr, 0xff, bytes);
    return VT_OK;
}
void vt_device_free(int32_t d, void* p) {
    (void)d;
    free(p);
}
vt_status vt_device_copy(int32_t d, void* dst, const void* src, size_t n, int32_t kind, void* stream) {
    (void)d, (void)kind, (void)stream;
    memcpy(dst, src, n);
    return VT_OK;
}

typedef vt_status (*linear_fn)(const vt_packed*, const float*, int64_t, const float*, const vt_linear_options*, float*);
typedef vt_status (*swiglu_fn)(const vt_packed*, const vt_packed*, const float*, int64_t, const float*, const float*,
                               const vt_linear_options*, float*);

vt_status vt_linear_device(const vt_packed* w, const float* x, int64_t m, const float* bias,
                           const vt_linear_options* o, float* y, void* stream) {
    (void)stream;
    if (!is_dev(w)) abort(); /* pyvt must never send a CPU weight here */
    return ((linear_fn)sym("vt_linear"))(w, x, m, bias, o, y);
}

vt_status vt_linear_swiglu_device(const vt_packed* g, const vt_packed* u, const float* x, int64_t m,
                                  const float* gb, const float* ub, const vt_linear_options* o, float* y,
                                  void* stream) {
    (void)stream;
    if (!is_dev(g) || !is_dev(u)) abort();
    return ((swiglu_fn)sym("vt_linear_swiglu"))(g, u, x, m, gb, ub, o, y);
}
