/* cuasync_fs.c — directory creation, atomic replacement of cache entries, directory listing,
 * per-process directories. */
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

int cuasync_fs_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char tmp[4200];
    FILE *f;
    size_t written;
    int e;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s (%s)", tmp, strerror(errno));
    /* errno is read where the failure shows: a full disk often only at the flush or the close */
    errno = 0;
    written = fwrite(data, 1, len, f);
    e = written != len ? errno : 0;
    if (!e && fflush(f) != 0) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (e || written != len) {
        remove(tmp);
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot write %s (%s)", tmp, strerror(e ? e : EIO));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        remove(tmp);
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot rename %s to %s (%s)", tmp, path,
                            strerror(e));
    }
    return CUASYNC_OK;
}

int cuasync_fs_regular_size(const char *path, long long *size)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISREG(st.st_mode)) return -2;
    *size = (long long)st.st_size;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cuasync_fs_list(const char *dir, const char *suffix, char *out, size_t outlen, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[512];
    size_t n = 0, i, used = 0, sl = strlen(suffix);
    int rc = CUASYNC_OK;
    if (!d)
        return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot list %s (%s)", dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < sl || strcmp(e->d_name + l - sl, suffix) != 0) continue;
        if (n == sizeof names / sizeof names[0] || !(names[n] = malloc(l + 1))) {
            rc = cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "too many files in %s", dir);
            break;
        }
        memcpy(names[n++], e->d_name, l + 1);
    }
    closedir(d);
    if (rc == CUASYNC_OK) qsort(names, n, sizeof names[0], by_name);
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
