/* C99 test of the libvt ABI: includes only vt.h (and the tests' own check.h), links libvt.
 * Every packed format against a naive C reference of the same quantized math, the fused
 * linears, sampling primitives, conversions, and error reporting. Exit status != 0 on any
 * failure; prints "N passed, M failed". */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt/vt.h"

#include "check.h"

/* y[m, out] = x[m, in] . w[out, in]^T (+ bias), in double. */
static void ref_linear(const float* w, const float* x, const float* bias, int m, int out, int in,
                       double* y) {
    int i, j, k;
    for (i = 0; i < m; ++i)
        for (j = 0; j < out; ++j) {
            double s = bias ? bias[j] : 0.0;
            for (k = 0; k < in; ++k) s += (double)x[i * in + k] * w[j * in + k];
            y[i * out + j] = s;
        }
}

/* max |a - b| / max |b| */
static double rel_err(const float* a, const double* b, int n) {
    double num = 0, den = 1e-30;
    int i;
    for (i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - b[i]);
        if (d > num || d != d) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}

static double silu(double v) { return v / (1.0 + exp(-v)); }

/* Quantize-dequantize rows of x the way W8A8 does, through vt_convert (FP8) or by hand. */
static void qdq_rows_fp8(const float* x, int m, int in, float* out) {
    int i, k;
    unsigned char* q = malloc((size_t)in);
    for (i = 0; i < m; ++i) {
        float amax = 0, s;
        float* tmp = malloc(sizeof(float) * (size_t)in);
        for (k = 0; k < in; ++k)
            if (fabsf(x[i * in + k]) > amax) amax = fabsf(x[i * in + k]);
        s = amax / 448.0f;
        for (k = 0; k < in; ++k) tmp[k] = x[i * in + k] / s;
        vt_convert(tmp, VT_DTYPE_F32, q, VT_DTYPE_F8_E4M3, (size_t)in);
        vt_convert(q, VT_DTYPE_F8_E4M3, tmp, VT_DTYPE_F32, (size_t)in);
        for (k = 0; k < in; ++k) out[i * in + k] = tmp[k] * s;
        free(tmp);
    }
    free(q);
}

static void qint_rows(const float* x, int m, int in, float qmax, float* out /* dequantized */) {
    int i, k;
    for (i = 0; i < m; ++i) {
        float amax = 0, s;
        for (k = 0; k < in; ++k)
            if (fabsf(x[i * in + k]) > amax) amax = fabsf(x[i * in + k]);
        s = amax / qmax;
        for (k = 0; k < in; ++k) {
            float q = s > 0 ? nearbyintf(x[i * in + k] / s) : 0.f;
            if (q > qmax) q = qmax;
            if (q < -qmax) q = -qmax;
            out[i * in + k] = q * s;
        }
    }
}

static const char* fmt_name(int f) {
    switch (f) {
        case VT_FORMAT_FP8_CHANNEL: return "fp8-channel";
        case VT_FORMAT_FP8_BLOCKED: return "fp8";
        case VT_FORMAT_INT8_BLOCKED: return "int8";
        case VT_FORMAT_INT8_SPARSE24: return "int8-sparse24";
        case VT_FORMAT_INT4_SPARSE24: return "int4-sparse24";
        case VT_FORMAT_INT4_MIN_BLOCKED: return "int4-min";
        default: return "bf16";
    }
}

static void test_format(int format, int out, int in, int m) {
    float *w = malloc(sizeof(float) * out * in), *wd = malloc(sizeof(float) * out * in);
    float *x = malloc(sizeof(float) * m * in), *xr = malloc(sizeof(float) * m * in);
    float *y = malloc(sizeof(float) * m * out), *bias = malloc(sizeof(float) * out);
    double* yr = malloc(sizeof(double) * m * out);
    vt_prepack_options po = vt_prepack_default_options();
    vt_linear_options lo = vt_linear_default_options();
    vt_packed* p = NULL;
    vt_packed_info info = VT_INFO_INIT(vt_packed_info);
    vt_status st;
    int i, sparse = format == VT_FORMAT_INT8_SPARSE24 || format == VT_FORMAT_INT4_SPARSE24;
    double e, tol, werr = 0, wnorm = 0;

    for (i = 0; i < out * in; ++i) w[i] = 0.05f * nrand();
    w[3] = 0.9f; /* an outlier */
    for (i = 0; i < m * in; ++i) x[i] = nrand();
    for (i = 0; i < out; ++i) bias[i] = 0.1f * nrand();

    po.format = format;
    st = vt_prepack(w, VT_DTYPE_F32, out, in, &po, &p);
    CHECK(st == VT_OK && p != NULL, "%s: prepack failed: %s", fmt_name(format), vt_last_error());
    if (!p) goto done;
    CHECK(vt_packed_get_info(p, &info) == VT_OK && info.format == format && info.out_features == out &&
              info.in_features == in && info.nbytes > 0 && info.device == VT_DEVICE_CPU,
          "%s: info", fmt_name(format));
    CHECK(vt_packed_unpack(p, wd) == VT_OK, "%s: unpack", fmt_name(format));
    for (i = 0; i < out * in; ++i) {
        if (wd[i] != 0 || !sparse) werr += (wd[i] - w[i]) * (double)(wd[i] - w[i]);
        wnorm += (double)w[i] * w[i];
    }
    {
        double tol = format == VT_FORMAT_BF16 ? 0.005 : format == VT_FORMAT_INT8_BLOCKED ? 0.02
                   : format == VT_FORMAT_INT4_SPARSE24 ? 0.4 : 0.1;
        CHECK(sqrt(werr / wnorm) < tol, "%s: unpack error %g", fmt_name(format), sqrt(werr / wnorm));
    }

    /* W8A16 (or the sparse formats' integer path) against the same quantized math. */
    st = vt_linear(p, x, m, bias, &lo, y);
    CHECK(st == VT_OK, "%s: linear: %s", fmt_name(format), vt_last_error());
    if (sparse) {
        qint_rows(x, m, in, format == VT_FORMAT_INT4_SPARSE24 ? 7.f : 127.f, xr);
        ref_linear(wd, xr, bias, m, out, in, yr);
    } else {
        ref_linear(wd, x, bias, m, out, in, yr);
    }
    e = rel_err(y, yr, m * out);
    /* An AVX2 CPU runs INT8 / INT4 / INT4_MIN linears on x rounded to int16 per K-block
       (docs/guide.md, "Numerics"): a few 1e-5 from the exact f32 product. */
    tol = format == VT_FORMAT_INT8_BLOCKED || format == VT_FORMAT_INT4_BLOCKED ||
                  format == VT_FORMAT_INT4_MIN_BLOCKED ? 1e-4 : 2e-5;
    CHECK(e < tol, "%s m=%d: linear rel err %g", fmt_name(format), m, e);

    if (!sparse) {
        /* GELU epilogue */
        lo.activation = VT_ACTIVATION_GELU;
        st = vt_linear(p, x, m, bias, &lo, y);
        for (i = 0; i < m * out; ++i) yr[i] = 0.5 * yr[i] * (1.0 + erf(yr[i] / sqrt(2.0)));
        e = rel_err(y, yr, m * out);
        CHECK(st == VT_OK && e < tol, "%s m=%d: gelu rel err %g", fmt_name(format), m, e);
        lo.activation = VT_ACTIVATION_NONE;

        /* quantize_input (W8A8 for FP8) */
        if (format == VT_FORMAT_FP8_BLOCKED || format == VT_FORMAT_FP8_CHANNEL) {
            lo.quantize_input = 1;
            st = vt_linear(p, x, m, NULL, &lo, y);
            qdq_rows_fp8(x, m, in, xr);
            ref_linear(wd, xr, NULL, m, out, in, yr);
            e = rel_err(y, yr, m * out);
            CHECK(st == VT_OK && e < 2e-5, "%s m=%d: w8a8 rel err %g", fmt_name(format), m, e);
            lo.quantize_input = 0;
        }
    }

    /* SwiGLU: gate = p, up = a second packed weight of the same shape */
    {
        vt_packed* up = NULL;
        float* wu = malloc(sizeof(float) * out * in);
        float* wud = malloc(sizeof(float) * out * in);
        double* yu = malloc(sizeof(double) * m * out);
        for (i = 0; i < out * in; ++i) wu[i] = 0.05f * nrand();
        st = vt_prepack(wu, VT_DTYPE_F32, out, in, &po, &up);
        CHECK(st == VT_OK, "%s: prepack up", fmt_name(format));
        if (up) {
            vt_packed_unpack(up, wud);
            st = vt_linear_swiglu(p, up, x, m, bias, NULL, &lo, y);
            if (sparse) {
                ref_linear(wd, xr, bias, m, out, in, yr);
                ref_linear(wud, xr, NULL, m, out, in, yu);
            } else {
                ref_linear(wd, x, bias, m, out, in, yr);
                ref_linear(wud, x, NULL, m, out, in, yu);
            }
            for (i = 0; i < m * out; ++i) yr[i] = silu(yr[i]) * yu[i];
            e = rel_err(y, yr, m * out);
            CHECK(st == VT_OK && e < 2.5 * tol, "%s m=%d: swiglu rel err %g (%s)", fmt_name(format), m, e,
                  vt_last_error());
            vt_packed_free(up);
        }
        free(wu);
        free(wud);
        free(yu);
    }
    vt_packed_free(p);
done:
    free(w); free(wd); free(x); free(xr); free(y); free(bias); free(yr);
}

static void test_errors(void) {
    float w[4 * 48];
    float x[48], y[4];
    vt_packed* p = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    vt_status st;
    int i;
    for (i = 0; i < 4 * 48; ++i) w[i] = (float)i * 0.01f;
    for (i = 0; i < 48; ++i) x[i] = 1.0f;

    st = vt_prepack(NULL, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strlen(vt_last_error()) > 0 && p == NULL,
          "NULL weights: %d '%s'", (int)st, vt_last_error());
    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, NULL);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strlen(vt_last_error()) > 0, "NULL out");

    po.block_size = 24;
    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "24") != NULL && p == NULL,
          "bad block size: '%s'", vt_last_error());
    po.block_size = 32; /* 48 % 32 != 0 */
    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "48") != NULL &&
              strstr(vt_last_error(), "32") != NULL,
          "in %% block: '%s'", vt_last_error());
    po.block_size = 16;
    st = vt_prepack(w, VT_DTYPE_I8, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT, "bad dtype");
    st = vt_prepack(w, VT_DTYPE_F32, 0, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT, "zero rows");
    po.format = 42;
    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "42") != NULL, "bad format");
    po.format = VT_FORMAT_INT8_BLOCKED;

    w[2 * 48 + 5] = NAN;
    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "row 2") != NULL &&
              strstr(vt_last_error(), "column 5") != NULL,
          "NaN weight: '%s'", vt_last_error());
    w[2 * 48 + 5] = 0.f;

    st = vt_prepack(w, VT_DTYPE_F32, 4, 48, &po, &p);
    CHECK(st == VT_OK && strlen(vt_last_error()) == 0, "good prepack clears the error");
    CHECK(vt_linear(NULL, x, 1, NULL, NULL, y) == VT_STATUS_INVALID_ARGUMENT, "linear NULL w");
    CHECK(vt_linear(p, NULL, 1, NULL, NULL, y) == VT_STATUS_INVALID_ARGUMENT, "linear NULL x");
    CHECK(vt_linear(p, x, 0, NULL, NULL, y) == VT_STATUS_INVALID_ARGUMENT, "linear m=0");
    CHECK(vt_linear(p, x, 1, NULL, NULL, NULL) == VT_STATUS_INVALID_ARGUMENT, "linear NULL y");
    {
        vt_linear_options lo = vt_linear_default_options();
        lo.activation = 7;
        CHECK(vt_linear(p, x, 1, NULL, &lo, y) == VT_STATUS_INVALID_ARGUMENT &&
                  strstr(vt_last_error(), "activation") != NULL, "bad activation");
    }
    CHECK(vt_packed_get_info(NULL, NULL) == VT_STATUS_INVALID_ARGUMENT, "info NULL");
    vt_packed_free(p);
    vt_packed_free(NULL);
}

static void test_sampling(void) {
    float l[6] = {1.0f, 3.0f, NAN, 3.0f, -2.0f, 0.5f};
    float pr[6];
    int64_t idx = -1;
    vt_sample_options so = vt_sample_default_options();
    double s = 0;
    int i, counts[6] = {0, 0, 0, 0, 0, 0};

    CHECK(vt_argmax(l, 6, &idx) == VT_OK && idx == 1, "argmax tie/NaN: %lld", (long long)idx);
    CHECK(vt_softmax(l, 6, pr) == VT_OK, "softmax");
    for (i = 0; i < 6; ++i) s += pr[i];
    CHECK(fabs(s - 1.0) < 1e-6 && pr[2] == 0.0f && fabsf(pr[1] - pr[3]) < 1e-7, "softmax values");
    CHECK(vt_sample(l, 6, &so, 0, &idx) == VT_OK && idx == 1, "greedy sample");
    so.temperature = 1.0f;
    so.top_k = 2;
    for (i = 0; i < 200; ++i) {
        CHECK(vt_sample(l, 6, &so, (uint64_t)i, &idx) == VT_OK, "sample");
        if (idx >= 0 && idx < 6) counts[idx]++;
    }
    CHECK(counts[1] + counts[3] == 200 && counts[1] > 50 && counts[3] > 50, "top-k=2 draws %d %d",
          counts[1], counts[3]);
    so.temperature = -1.0f;
    CHECK(vt_sample(l, 6, &so, 0, &idx) == VT_STATUS_INVALID_ARGUMENT &&
              strstr(vt_last_error(), "temperature") != NULL, "negative temperature");
    so.temperature = 1.0f;
    so.top_p = 1.5f;
    CHECK(vt_sample(l, 6, &so, 0, &idx) == VT_STATUS_INVALID_ARGUMENT &&
              strstr(vt_last_error(), "top_p") != NULL, "bad top_p");
    {
        /* vt_logits_process: penalties over a history, the min-p mask, the candidate set. */
        float x[5] = {2.0f, -1.0f, 0.5f, 4.0f, 1.0f}, out[5];
        const int32_t inputs[2] = {0, 1}, chosen[3] = {2, 2, 3};
        vt_sample_options po = vt_sample_default_options();
        po.repetition_penalty = 2.0f;
        po.frequency_penalty = 0.5f;
        po.presence_penalty = 0.25f;
        CHECK(vt_logits_process(x, 5, &po, inputs, 2, chosen, 3, VT_PROCESS_PENALTIES, out) == VT_OK &&
                  out[0] == 1.0f && out[1] == -2.0f && out[2] == (0.25f - 1.0f) - 0.25f &&
                  out[3] == (2.0f - 0.5f) - 0.25f && out[4] == 1.0f,
              "penalties: %g %g %g %g %g", out[0], out[1], out[2], out[3], out[4]);
        po = vt_sample_default_options();
        po.temperature = 1.0f;
        po.min_p = 0.1f; /* cut below ln(0.1) = -2.30: 4 - 1 and 4 - (-1) */
        CHECK(vt_logits_process(x, 5, &po, NULL, 0, NULL, 0, VT_PROCESS_MIN_P, out) == VT_OK && out[0] == 2.0f &&
                  isinf(out[1]) && isinf(out[2]) && out[3] == 4.0f && out[4] == -INFINITY,
              "min-p mask");
        po.min_p = 0.0f;
        po.top_k = 2;
        CHECK(vt_logits_process(x, 5, &po, NULL, 0, NULL, 0, VT_PROCESS_CANDIDATES, out) == VT_OK &&
                  out[0] == 2.0f && out[3] == 4.0f && isinf(out[1]) && isinf(out[2]) && isinf(out[4]),
              "candidates: top-k 2");
        CHECK(vt_logits_process(x, 5, &po, inputs, 2, chosen, 3, 8, out) == VT_STATUS_INVALID_ARGUMENT &&
                  strstr(vt_last_error(), "flags") != NULL, "unknown flag");
        CHECK(vt_logits_process(x, 3, &po, inputs, 2, chosen, 3, VT_PROCESS_PENALTIES, out) ==
                      VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "chosen[2] = 3 is outside [0, 3)") != NULL,
              "an id outside the row");
    }
    {
        double u = vt_uniform(42, 0), u2 = vt_uniform(42, 0);
        CHECK(u >= 0 && u < 1 && u == u2 && vt_uniform(42, 1) != u && vt_uniform(43, 0) != u, "uniform");
    }
}

static void test_convert(void) {
    float src[5] = {1.0f, -0.3f, 1000.0f, 1e-4f, -0.0f};
    unsigned char q[5];
    float back[5];
    uint16_t h[5];
    float a[6] = {1, 2, 3, 4, 5, 6}, t[6];
    CHECK(vt_convert(src, VT_DTYPE_F32, q, VT_DTYPE_F8_E4M3, 5) == VT_OK, "to fp8");
    CHECK(q[0] == 0x38 && q[2] == 0x7E && q[4] == 0x80, "fp8 codes %x %x %x", q[0], q[2], q[4]);
    CHECK(vt_convert(q, VT_DTYPE_F8_E4M3, back, VT_DTYPE_F32, 5) == VT_OK && back[2] == 448.0f &&
              fabsf(back[1] + 0.3f) < 0.02f, "from fp8");
    CHECK(vt_convert(src, VT_DTYPE_F32, h, VT_DTYPE_BF16, 5) == VT_OK && h[0] == 0x3F80, "bf16");
    CHECK(vt_convert(src, VT_DTYPE_F32, h, VT_DTYPE_I32, 5) == VT_STATUS_INVALID_ARGUMENT, "bad dtype");
    CHECK(vt_transpose(a, t, 2, 3, 4) == VT_OK && t[0] == 1 && t[1] == 4 && t[2] == 2 && t[5] == 6,
          "transpose");
    CHECK(vt_transpose(a, t, 2, 3, 3) == VT_STATUS_INVALID_ARGUMENT, "transpose elem size");
}

/* The extensible structs (vt.h "Conventions"): an older caller's shorter struct gets the
 * defaults for the fields it lacks; 0 or a newer caller's larger options struct is refused;
 * an info struct is filled only as far as the caller's struct_size. */
static void test_struct_sizes(void) {
    float w[4 * 32], x[32], y[4], y2[4];
    vt_packed* p = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    vt_linear_options lo = vt_linear_default_options();
    vt_packed_info pi = VT_INFO_INIT(vt_packed_info);
    vt_packed_info small = VT_INFO_INIT(vt_packed_info);
    vt_sample_options so = vt_sample_default_options();
    float lg[3] = {0.5f, 2.0f, 1.0f};
    int64_t tok = -1;
    int i;
    CHECK(vt_abi_version() == VT_ABI_VERSION && VT_ABI_VERSION == 2, "ABI version %d", vt_abi_version());
    CHECK(po.struct_size == sizeof po && lo.struct_size == sizeof lo && so.struct_size == sizeof so,
          "defaults set struct_size");
    for (i = 0; i < 4 * 32; ++i) w[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    for (i = 0; i < 32; ++i) x[i] = (float)(i % 5) - 2.0f;
    CHECK(vt_prepack(w, VT_DTYPE_F32, 4, 32, &po, &p) == VT_OK, "prepack");
    CHECK(vt_packed_get_info(p, &pi) == VT_OK && pi.struct_size == sizeof pi && pi.out_features == 4 &&
              pi.in_features == 32, "info");
    /* A caller that knows only the first fields (up to out_features): the rest is untouched. */
    small.struct_size = (uint32_t)offsetof(vt_packed_info, in_features);
    small.in_features = -7;
    CHECK(vt_packed_get_info(p, &small) == VT_OK && small.struct_size == offsetof(vt_packed_info, in_features) &&
              small.out_features == 4 && small.in_features == -7, "info: a shorter struct is filled to its size");
    small.struct_size = 0;
    CHECK(vt_packed_get_info(p, &small) == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "struct_size") != NULL,
          "info: struct_size 0 refused");
    /* An older vt_linear_options without `activation`: GELU set past its end is not read. */
    lo.activation = VT_ACTIVATION_NONE;
    CHECK(vt_linear(p, x, 1, NULL, &lo, y) == VT_OK, "linear");
    lo.struct_size = (uint32_t)offsetof(vt_linear_options, activation);
    lo.activation = VT_ACTIVATION_GELU;
    CHECK(vt_linear(p, x, 1, NULL, &lo, y2) == VT_OK && memcmp(y, y2, sizeof y) == 0,
          "options: an older struct gets the defaults for the fields it lacks");
    lo.struct_size = (uint32_t)sizeof lo + 8;
    CHECK(vt_linear(p, x, 1, NULL, &lo, y2) == VT_STATUS_INVALID_ARGUMENT && strstr(vt_last_error(), "newer vt.h") != NULL,
          "options: a larger struct_size is refused");
    lo.struct_size = 0;
    CHECK(vt_linear(p, x, 1, NULL, &lo, y2) == VT_STATUS_INVALID_ARGUMENT &&
              strstr(vt_last_error(), "_default_options") != NULL,
          "options: struct_size 0 is refused naming the defaults function");
    so.struct_size = (uint32_t)offsetof(vt_sample_options, top_k); /* temperature only */
    so.temperature = 0.0f;
    so.top_k = -5; /* past the caller's struct: not read, not refused */
    CHECK(vt_sample(lg, 3, &so, 0, &tok) == VT_OK && tok == 1, "sample options: older struct");
    vt_packed_free(p);
}

int main(void) {
    static const int formats[7] = {VT_FORMAT_FP8_CHANNEL, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_INT8_BLOCKED,
                                   VT_FORMAT_INT8_SPARSE24, VT_FORMAT_INT4_SPARSE24, VT_FORMAT_BF16,
                                   VT_FORMAT_INT4_MIN_BLOCKED};
    static const int ms[4] = {1, 3, 7, 70};
    int f, j;
    CHECK(vt_version() != NULL && strlen(vt_version()) >= 5, "version");
    CHECK(vt_backend_info() != NULL && strncmp(vt_backend_info(), "cpu: available", 14) == 0,
          "backend info");
    CHECK(vt_cuda_available() == 0 || vt_cuda_available() == 1, "cuda available");
    CHECK(vt_get_num_threads() >= 1, "threads");
    CHECK(strcmp(vt_status_name(VT_STATUS_FORMAT_ERROR), "VT_STATUS_FORMAT_ERROR") == 0, "status name");
    {
        const uint64_t regions = vt_parallel_regions();
        for (f = 0; f < 7; ++f)
            for (j = 0; j < 4; ++j) test_format(formats[f], 37, 128, ms[j]);
        CHECK(vt_parallel_regions() >= regions, "parallel regions count up");
    }
    test_errors();
    test_sampling();
    test_struct_sizes();
    test_convert();
    return check_summary();
}
