/* glibc_compat.c: the few glibc symbols newer than the wheel's target glibc (2.28) that
 * objects compiled on Debian 12 (glibc 2.36 headers, GCC 12's libstdc++.a) refer to, defined
 * here in terms of what glibc 2.28 has. Linked into the CUDA wheel's binaries by
 * tools/wheels/oldglibc_cc.py as an archive, so a definition is used only where a binary
 * needs it; every one is hidden (it binds inside that binary and is not exported).
 *
 * __libc_single_threaded (GLIBC_2.32): libstdc++ reads it to skip atomic reference counting
 *   while a process has one thread. 0 means "maybe multi-threaded": always the atomic path,
 *   which is correct in every process (what libstdc++ does on a glibc without the variable).
 * stat, fstat, lstat (GLIBC_2.33): before 2.33 the headers turned them into calls to
 *   __xstat / __fxstat / __lxstat with _STAT_VER (1 on x86-64), which every glibc since 2.2.5
 *   still exports; on x86-64 those fill the same struct stat.
 * arc4random (GLIBC_2.36): libstdc++.a's random.o refers to it (std::random_device's
 *   "arc4random" source; random.o comes with every binary that can throw std::logic_error).
 *   Here: 4 bytes from getentropy (GLIBC_2.25), the kernel's getrandom; abort() if that
 *   fails (a kernel older than 3.17), as arc4random has no way to report an error.
 */
#if !defined(__x86_64__)
#error "glibc_compat.c is written for x86-64 (its _STAT_VER and struct stat)"
#endif

#define VT_COMPAT __attribute__((visibility("hidden")))

struct stat;
extern int __xstat(int ver, const char *path, struct stat *st);
extern int __fxstat(int ver, int fd, struct stat *st);
extern int __lxstat(int ver, const char *path, struct stat *st);
extern int getentropy(void *buf, unsigned long len);
extern void abort(void);

VT_COMPAT char __libc_single_threaded = 0;

VT_COMPAT int stat(const char *path, struct stat *st) { return __xstat(1, path, st); }
VT_COMPAT int fstat(int fd, struct stat *st) { return __fxstat(1, fd, st); }
VT_COMPAT int lstat(const char *path, struct stat *st) { return __lxstat(1, path, st); }

VT_COMPAT unsigned int arc4random(void) {
    unsigned int r;
    if (getentropy(&r, sizeof r) != 0) abort();
    return r;
}
