/* C99 + POSIX test: files that change while libvt loads them, and hostile SafeTensors
 * headers, through vt_model_load (docs/reliability.md "Files that change while they are
 * read", "JSON files"). Run as
 *     test_files MODEL_DIR            (fuzz/data: a tiny Llama, config.json + model.safetensors)
 * Built and run by meson (tests/c/meson.build), also under ASan + UBSan (test_sanitizers.py).
 *
 * 1. The weights file truncated (or rewritten in place) by the progress callback while the
 *    load reads it: VT_STATUS_IO_ERROR naming it, not SIGBUS.
 * 2. libvt's SIGBUS handler exists only during a load: the program's own handler is back
 *    afterwards, and a SIGBUS in a mapping of the program's own during a load reaches it.
 * 3. Headers with millions of values, deep nesting, long strings, escapes, duplicate keys:
 *    VT_STATUS_FORMAT_ERROR naming the file. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "vt/vt.h"

#include "check.h"

static char g_dir[256];
static char g_model[300];
static char* g_orig;
static size_t g_orig_size;

static char* read_all(const char* path, size_t* n) {
    FILE* f = fopen(path, "rb");
    char* buf;
    long size;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char*)malloc((size_t)size + 1);
    if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)size;
    return buf;
}

static int write_all(const char* path, const char* data, size_t n) {
    FILE* f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = n == 0 || fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void restore_model(void) {
    struct timeval old[2];
    CHECK(write_all(g_model, g_orig, g_orig_size), "restore %s", g_model);
    /* an old modification time, so that any rewrite changes it */
    old[0].tv_sec = old[1].tv_sec = 1000;
    old[0].tv_usec = old[1].tv_usec = 0;
    utimes(g_model, old);
}

static vt_status load(vt_progress_fn progress, vt_model** m) {
    vt_model_options o = vt_model_default_options();
    o.device = VT_DEVICE_CPU;
    o.block_size = 16;
    o.progress = progress;
    *m = NULL;
    return vt_model_load(g_dir, &o, m);
}

/* ---- 1 + 2: changes during the load, and whose SIGBUS handler is installed ---------- */

static volatile sig_atomic_t g_own_handler_ran;
static sigjmp_buf g_jump;

static void own_handler(int sig) {
    (void)sig;
    g_own_handler_ran = 1;
    siglongjmp(g_jump, 1);
}

static int calls;

static int truncate_on_first(void* user, int64_t done, int64_t total) {
    (void)user; (void)done; (void)total;
    if (calls++ == 0) CHECK(truncate(g_model, 0) == 0, "truncate the weights");
    return 0;
}

static int truncate_to_half(void* user, int64_t done, int64_t total) {
    (void)user; (void)done; (void)total;
    if (calls++ == 0) CHECK(truncate(g_model, (off_t)(g_orig_size / 2)) == 0, "truncate the weights to half");
    return 0;
}

static int rewrite_on_first(void* user, int64_t done, int64_t total) {
    (void)user; (void)done; (void)total;
    if (calls++ == 0) {
        int fd = open(g_model, O_WRONLY);
        CHECK(fd >= 0 && pwrite(fd, "\0\0\0\0", 4, (off_t)(g_orig_size - 4)) == 4, "rewrite the last 4 bytes");
        if (fd >= 0) close(fd);
    }
    return 0;
}

/* During the load, a SIGBUS from a truncated mapping of the program's own: not libvt's. */
static int foreign_sigbus(void* user, int64_t done, int64_t total) {
    char path[300];
    int fd;
    volatile char* p;
    (void)user; (void)done; (void)total;
    if (calls++ != 0) return 0;
    snprintf(path, sizeof path, "%s/foreign", g_dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 8192) == 0, "a file of our own");
    p = (volatile char*)mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != (volatile char*)MAP_FAILED, "mapped");
    if (p != (volatile char*)MAP_FAILED) {
        CHECK(ftruncate(fd, 0) == 0, "truncated");
        volatile int read_it = 0;
        g_own_handler_ran = 0;
        if (sigsetjmp(g_jump, 1) == 0) {
            char c = p[4096]; /* SIGBUS: must reach own_handler, which jumps back here */
            (void)c;
            read_it = 1;      /* volatile: not moved before the read */
        }
        CHECK(!read_it && g_own_handler_ran, "the program's own SIGBUS handler got its fault during a load");
        munmap((void*)p, 8192);
    }
    close(fd);
    unlink(path);
    return 0;
}

static int handler_is_own(void) {
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0) return 0;
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == own_handler;
}

static void test_changes(void) {
    struct sigaction act;
    vt_model* m = NULL;
    vt_status st;
    memset(&act, 0, sizeof act);
    act.sa_handler = own_handler;
    sigemptyset(&act.sa_mask);
    CHECK(sigaction(SIGBUS, &act, NULL) == 0, "install our own SIGBUS handler");

    restore_model();
    calls = 0;
    st = load(truncate_on_first, &m);
    CHECK(st == VT_STATUS_IO_ERROR && m == NULL && strstr(vt_last_error(), "changed or was truncated") &&
              strstr(vt_last_error(), "model.safetensors"),
          "truncated to 0 during the load: %s: %s", vt_status_name(st), vt_last_error());
    CHECK(handler_is_own(), "our SIGBUS handler is back after a failed load");

    restore_model();
    calls = 0;
    st = load(truncate_to_half, &m);
    CHECK(st == VT_STATUS_IO_ERROR && m == NULL && strstr(vt_last_error(), "changed or was truncated"),
          "truncated to half during the load: %s: %s", vt_status_name(st), vt_last_error());

    restore_model();
    calls = 0;
    st = load(rewrite_on_first, &m);
    CHECK(st == VT_STATUS_IO_ERROR && m == NULL && strstr(vt_last_error(), "changed or was truncated"),
          "rewritten in place during the load: %s: %s", vt_status_name(st), vt_last_error());

    restore_model();
    calls = 0;
    st = load(foreign_sigbus, &m);
    CHECK(st == VT_OK && m != NULL, "a load during which the program handles its own SIGBUS: %s", vt_last_error());
    vt_model_free(m);
    CHECK(handler_is_own(), "our SIGBUS handler is back after a load");

    restore_model();
    st = load(NULL, &m);
    CHECK(st == VT_OK && m != NULL, "the intact file loads: %s", vt_last_error());
    vt_model_free(m);

    act.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &act, NULL);
}

/* ---- 3: hostile headers ---------------------------------------------------------------- */

/* model.safetensors := 8-byte length + header (padded with spaces) + nothing. */
static void write_header(const char* header, size_t n) {
    size_t padded = (n + 7) / 8 * 8, i;
    char* buf = (char*)malloc(8 + padded);
    uint64_t len = padded;
    for (i = 0; i < 8; ++i) buf[i] = (char)((len >> (8 * i)) & 0xFF);
    memcpy(buf + 8, header, n);
    memset(buf + 8 + n, ' ', padded - n);
    CHECK(write_all(g_model, buf, 8 + padded), "write a header");
    free(buf);
}

static void expect_format_error(const char* what, const char* needle) {
    vt_model* m = NULL;
    vt_status st = load(NULL, &m);
    CHECK(st == VT_STATUS_FORMAT_ERROR && m == NULL && strstr(vt_last_error(), "model.safetensors") &&
              strstr(vt_last_error(), needle),
          "%s: %s: %s (expected \"%s\")", what, vt_status_name(st), vt_last_error(), needle);
}

/* "{\"x\":[" + count x item (comma-separated) + "]}" */
static void repeated(const char* item, size_t count, const char* what, const char* needle) {
    size_t il = strlen(item), n = 0, i;
    char* h = (char*)malloc(16 + count * (il + 1));
    n += (size_t)sprintf(h, "{\"x\":[");
    for (i = 0; i < count; ++i) {
        if (i) h[n++] = ',';
        memcpy(h + n, item, il);
        n += il;
    }
    h[n++] = ']';
    h[n++] = '}';
    write_header(h, n);
    free(h);
    expect_format_error(what, needle);
}

static void test_headers(void) {
    const size_t limit = (size_t)1 << 21;
    repeated("0", limit + 1, "2M + 1 numbers", "more than 2097152 values");
    repeated("{}", limit, "2M empty objects", "more than 2097152 values");
    repeated("[[[[[[0]]]]]]", limit / 7 + 1, "300k depth-8 nests", "more than 2097152 values");
    repeated("\"\\u00e9\\ud83d\\ude00\"", 100000, "100k escaped strings", "header entry is not a JSON object");
    repeated("[[[[[[[[0]]]]]]]]", 1, "depth 10", "nesting deeper than 8");
    {
        /* 200k distinct keys, then one repeated: named with its byte offset */
        size_t count = 200000, n = 0, i;
        char* h = (char*)malloc(32 * count);
        h[n++] = '{';
        for (i = 0; i < count; ++i) n += (size_t)sprintf(h + n, "%s\"k%lu\":0", i ? "," : "", (unsigned long)i);
        n += (size_t)sprintf(h + n, ",\"k7\":1}");
        write_header(h, n);
        free(h);
        expect_format_error("200k keys and a duplicate", "duplicate key \"k7\"");
    }
    {
        /* one 4 MB string */
        size_t len = (size_t)4 << 20, n = 0;
        char* h = (char*)malloc(len + 32);
        n += (size_t)sprintf(h, "{\"x\":\"");
        memset(h + n, 'a', len);
        n += len;
        n += (size_t)sprintf(h + n, "\"}");
        write_header(h, n);
        free(h);
        expect_format_error("a 4 MB string", "header entry is not a JSON object");
    }
    write_header("{\"x\":\"abc", 9);
    expect_format_error("an unterminated string", "unterminated string");
    write_header("{\"x\":[1,2,{\"y\":[3,{}]}", 22);
    expect_format_error("an unclosed array", "unexpected end of input");
    restore_model();
}

int main(int argc, char** argv) {
    char src[300];
    char* cfg;
    size_t cfg_n = 0;
    char path[300];
    const char* tmp = getenv("TMPDIR");
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* every line out, whatever the signals do */
    snprintf(g_dir, sizeof g_dir, "%s/vt_files_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(g_model, sizeof g_model, "%s/model.safetensors", g_dir);
    snprintf(src, sizeof src, "%s/model.safetensors", argv[1]);
    g_orig = read_all(src, &g_orig_size);
    snprintf(src, sizeof src, "%s/config.json", argv[1]);
    cfg = read_all(src, &cfg_n);
    snprintf(path, sizeof path, "%s/config.json", g_dir);
    if (!g_orig || !cfg || !write_all(path, cfg, cfg_n)) {
        printf("cannot copy the model of %s\n0 passed, 1 failed\n", argv[1]);
        return 1;
    }

    test_changes();
    test_headers();

    unlink(g_model);
    unlink(path);
    rmdir(g_dir);
    free(g_orig);
    free(cfg);
    return check_summary();
}
