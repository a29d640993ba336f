/* cuasync_fs.c — directory creation, checked plain and atomic writes, what a path is, listings
 * and usage, FIFOs, per-process directories, locks. */
#define _POSIX_C_SOURCE 200809L
#define CUASYNC_INTERNAL
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuasync_fs.h"
#include "cuasync_error.h"

int cuasync_fs_mkdirs(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    size_t i, n = strlen(dir);
    struct stat st;
    if (n == 0 || n >= sizeof path)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cache directory path '%s' is empty or too long", dir);
    memcpy(path, dir, n + 1);
    for (i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot create directory %s (%s)", path,
                                strerror(errno));
        path[i] = i == n ? '\0' : '/';
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "%s is not a directory", dir);
    return CUASYNC_OK;
}

/* -- Checked writes ------------------------------------------------------- */

/* Write all of data to fd: 0, or the errno of the failure (EIO for a write that wrote nothing).
 * write(2) may write less than asked (a full disk part way, a signal): the rest is written again. */
static int fs_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        ssize_t n = write(fd, data, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write then close: 0 or errno. A close's EINTR still closed the descriptor and lost nothing. */
static int fs_write_close(int fd, const void *data, size_t len)
{
    int e = fs_write_all(fd, (const char *)data, len);
    if (close(fd) != 0 && !e && errno != EINTR) e = errno;
    return e;
}

int cuasync_fs_write(const char *path, const void *data, size_t len, int append, char *err, size_t errlen)
{
    int e, fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0666);
    if (fd < 0)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s: %s", path, strerror(errno));
    e = fs_write_close(fd, data, len);
    if (e) return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s: %s", path, strerror(e));
    return CUASYNC_OK;
}

int cuasync_fs_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char tmp[4200];
    int e, fd;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cannot write %s: the path is too long", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s: %s (its temporary file %s)", path,
                            strerror(errno), tmp);
    e = fs_write_close(fd, data, len);
    if (e) {
        remove(tmp);
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s: %s (its temporary file %s)", path,
                            strerror(e), tmp);
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        remove(tmp);
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return CUASYNC_OK;
}

/* -- What a path is, and how much is under a directory --------------------- */

int cuasync_fs_regular_size(const char *path, long long *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISREG(st.st_mode)) return -2;
    *size = (long long)st.st_size;
    return 0;
}

int cuasync_fs_kind(const char *path, long long *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (S_ISREG(st.st_mode)) {
        *size = (long long)st.st_size;
        return 1;
    }
    return S_ISDIR(st.st_mode) ? 2 : 3;
}

/* Add the regular files under path (len bytes used of its cap) to *files and *bytes; path is
 * extended in place and restored. Deeper than 32 levels is not walked (a cache is two deep). */
static int fs_usage_walk(char *path, size_t len, size_t cap, int depth, long long *files, long long *bytes)
{
    DIR *d = opendir(path);
    struct dirent *e;
    struct stat st;
    if (!d) return errno;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || len + l + 2 > cap) continue;
        path[len] = '/';
        memcpy(path + len + 1, e->d_name, l + 1);
        if (lstat(path, &st) == 0) {
            if (S_ISREG(st.st_mode)) {
                *files += 1;
                *bytes += (long long)st.st_size;
            } else if (S_ISDIR(st.st_mode) && depth < 32) {
                fs_usage_walk(path, len + 1 + l, cap, depth + 1, files, bytes);
            }
        }
        path[len] = '\0';
    }
    closedir(d);
    return 0;
}

int cuasync_fs_usage(const char *dir, long long *files, long long *bytes, char *err, size_t errlen)
{
    char path[4096];
    size_t n = strlen(dir);
    int e;
    *files = 0;
    *bytes = 0;
    if (n == 0 || n >= sizeof path)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "directory path '%s' is empty or too long", dir);
    memcpy(path, dir, n + 1);
    e = fs_usage_walk(path, n, sizeof path, 0, files, bytes);
    if (e) return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot list %s: %s", dir, strerror(e));
    return CUASYNC_OK;
}

int cuasync_fs_mkfifo(const char *path, char *err, size_t errlen)
{
    if (mkfifo(path, 0600) != 0)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot make the FIFO %s: %s", path, strerror(errno));
    return CUASYNC_OK;
}

/* -- Listings ------------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cuasync_fs_list(const char *dir, const char *suffix, char *out, size_t outlen, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i, used = 0, sl = strlen(suffix);
    int rc = CUASYNC_OK;
    if (!d)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot list %s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < sl || strcmp(e->d_name + l - sl, suffix) != 0) continue;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            char **grown = realloc(names, (cap ? 2 * cap : 64) * sizeof *names);
            if (!grown) {
                rc = cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "cannot list %s: out of memory", dir);
                break;
            }
            names = grown;
            cap = cap ? 2 * cap : 64;
        }
        if (!(names[n] = malloc(l + 1))) {
            rc = cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "cannot list %s: out of memory", dir);
            break;
        }
        memcpy(names[n++], e->d_name, l + 1);
    }
    closedir(d);
    if (rc == CUASYNC_OK && n > 0) qsort(names, n, sizeof names[0], by_name);
    if (outlen) out[0] = '\0';
    for (i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (rc == CUASYNC_OK && used + l + 2 > outlen)
            rc = cuasync_fail(err, errlen, CUASYNC_E_INVALID, "listing of %s does not fit %zu bytes", dir, outlen);
        if (rc == CUASYNC_OK) {
            memcpy(out + used, names[i], l);
            used += l;
            out[used++] = '\n';
            out[used] = '\0';
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* A directory named by a pid is stale when no process has that pid. Its files (NVRTC deletes
 * its PCH files at exit, so usually none) and the directory go; failures only leave it. */
static void reap_pid_dir(const char *parent, const char *name)
{
    char path[4200], file[4500];
    DIR *d;
    struct dirent *e;
    const char *c;
    long pid;
    for (c = name; *c; c++) if (*c < '0' || *c > '9') return;
    pid = strtol(name, NULL, 10);
    if (c == name || pid <= 0 || pid == (long)getpid()) return;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return;
    snprintf(path, sizeof path, "%s/%s", parent, name);
    if ((d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(file, sizeof file, "%s/%s", path, e->d_name);
            remove(file);
        }
        closedir(d);
    }
    rmdir(path);
}

int cuasync_fs_pid_dir(const char *parent, char *out, size_t outlen, char *err, size_t errlen)
{
    DIR *d;
    struct dirent *e;
    int rc = cuasync_fs_mkdirs(parent, err, errlen);
    if (rc != CUASYNC_OK) return rc;
    if ((d = opendir(parent)) != NULL) {
        while ((e = readdir(d)) != NULL) reap_pid_dir(parent, e->d_name);
        closedir(d);
    }
    if ((size_t)snprintf(out, outlen, "%s/%ld", parent, (long)getpid()) >= outlen)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "directory path under %s does not fit %zu bytes", parent, outlen);
    return cuasync_fs_mkdirs(out, err, errlen);
}

/* An exclusive advisory lock (fcntl: POSIX, and it works on NFS where flock may not) on path,
 * created if missing; waits for it. The lock goes with the descriptor: closed by
 * cuasync_fs_unlock, or by the process's exit if it dies holding it. */
int cuasync_fs_lock(const char *path, int *fd, char *err, size_t errlen)
{
    struct flock fl;
    int f = open(path, O_RDWR | O_CREAT, 0644);
    if (f < 0)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot open the lock file %s (%s)", path, strerror(errno));
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    while (fcntl(f, F_SETLKW, &fl) != 0) {
        if (errno == EINTR) continue;
        {
            int e = errno;
            close(f);
            return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot lock %s (%s)", path, strerror(e));
        }
    }
    *fd = f;
    return CUASYNC_OK;
}

void cuasync_fs_unlock(int fd)
{
    if (fd >= 0) close(fd);
}
