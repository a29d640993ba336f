/* cuasync_fs.c — directory creation, checked plain and atomic writes, what a path is, listings
 * and usage, FIFOs, per-process directories, locks. */
#define _POSIX_C_SOURCE 200809L
#define CUASYNC_INTERNAL
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* -- Per-process directories ----------------------------------------------- */

/* parent/<host>.<pid>.<XXXXXX> (mkdtemp: a name no other process anywhere has, so two containers
 * whose processes are both pid 1 never share one). Its owner is alive while it holds an fcntl
 * write lock on <dir>/lock, taken when the directory is made and held for the process's life: a
 * lock is the kernel's (or the NFS server's) word, the same from every PID namespace and every
 * node, where kill(pid, 0) answers only for the caller's own namespace. A reaper removes only a
 * directory whose lock it can take; one with no lock file (being made, or from a cuasync before
 * the lock) is left alone. POSIX locks belong to the process and go when it closes ANY descriptor
 * of the file, so nothing in this process opens its own lock file but the owner below (the
 * reaper skips this process's directories by name). */

#define FS_OWNED_MAX 16
#define FS_LOCK_NAME "lock"

/* This process's directories, one per parent: the fd holds the lock. pid: the process that made
 * it (a fork's child inherits this table but not the lock, and makes its own). */
static struct fs_owned {
    char *parent, *dir;
    int fd;
    long pid;
} fs_owned[FS_OWNED_MAX];

/* 0 when fd now holds a write lock on its file; else errno (EAGAIN or EACCES: another holds it). */
static int fs_try_lock(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    while (fcntl(fd, F_SETLK, &fl) != 0) {
        if (errno != EINTR) return errno;
    }
    return 0;
}

/* Whether <dir>/lock is still the file fd has open (the directory has not vanished). */
static int fs_owned_intact(const struct fs_owned *o)
{
    char lock[4200];
    struct stat a, b;
    if ((size_t)snprintf(lock, sizeof lock, "%s/" FS_LOCK_NAME, o->dir) >= sizeof lock) return 0;
    return stat(lock, &a) == 0 && fstat(o->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void fs_owned_drop(struct fs_owned *o)
{
    if (o->fd >= 0) close(o->fd);   /* an inherited fd: closing it leaves the parent's lock */
    free(o->parent);
    free(o->dir);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

/* Whether name (an entry of parent) is one of this process's directories. */
static int fs_owned_name(const char *parent, const char *name)
{
    size_t i, pl = strlen(parent);
    for (i = 0; i < FS_OWNED_MAX; i++) {
        const struct fs_owned *o = &fs_owned[i];
        if (o->dir && o->pid == (long)getpid() && strncmp(o->dir, parent, pl) == 0 && o->dir[pl] == '/'
            && strcmp(o->dir + pl + 1, name) == 0)
            return 1;
    }
    return 0;
}

/* Remove parent/name if it is a directory whose lock file can be locked (its owner is gone): its
 * files (NVRTC deletes its PCH files at exit, so usually only the lock), then the directory, the
 * lock held until it is gone. Anything else, and any failure, leaves it. */
static void fs_reap(const char *parent, const char *name)
{
    char path[4200], file[4500];
    DIR *d;
    struct dirent *e;
    struct stat st;
    int fd;
    if (name[0] == '.' || fs_owned_name(parent, name)) return;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", parent, name) >= sizeof path) return;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return;
    if ((size_t)snprintf(file, sizeof file, "%s/" FS_LOCK_NAME, path) >= sizeof file) return;
    if ((fd = open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0) return;
    if (fs_try_lock(fd) != 0) {
        close(fd);
        return;
    }
    if ((d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0
                || strcmp(e->d_name, FS_LOCK_NAME) == 0) continue;
            if ((size_t)snprintf(file, sizeof file, "%s/%s", path, e->d_name) < sizeof file) remove(file);
        }
        closedir(d);
    }
    snprintf(file, sizeof file, "%s/" FS_LOCK_NAME, path);
    remove(file);
    rmdir(path);
    close(fd);
}

/* This host's name as a file name's first part: its first label, [A-Za-z0-9-] only. */
static void fs_host_label(char *out, size_t outlen)
{
    char host[256];
    size_t i, n = 0;
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    for (i = 0; host[i] && host[i] != '.' && n + 1 < outlen && n < 63; i++) {
        char c = host[i];
        out[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') ? c : '-';
    }
    if (n == 0 && outlen > 4) {
        memcpy(out, "host", 4);
        n = 4;
    }
    out[n] = '\0';
}

/* Make a directory under parent and take its lock into *o. A reaper that opened the new lock file
 * before this process locked it may take the lock first and remove the directory: then the lock
 * fails, or the lock file is no longer the one held, and another directory is made. */
static int fs_owned_make(struct fs_owned *o, const char *parent, char *err, size_t errlen)
{
    char host[64], dir[4200], lock[4300];
    int attempt, e = 0;
    fs_host_label(host, sizeof host);
    for (attempt = 0; attempt < 8; attempt++) {
        int fd;
        if ((size_t)snprintf(dir, sizeof dir, "%s/%s.%ld.XXXXXX", parent, host, (long)getpid()) >= sizeof dir
            || (size_t)snprintf(lock, sizeof lock, "%s/" FS_LOCK_NAME, dir) >= sizeof lock)
            return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "directory path under %s is too long", parent);
        if (!mkdtemp(dir))
            return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot make a directory under %s (%s)", parent,
                                strerror(errno));
        snprintf(lock, sizeof lock, "%s/" FS_LOCK_NAME, dir);
        if ((fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
            e = errno;
            rmdir(dir);
            continue;
        }
        e = fs_try_lock(fd);
        if (e == EAGAIN || e == EACCES) {   /* a reaper holds it: the directory is going */
            close(fd);
            continue;
        }
        /* any other failure: this filesystem has no locks; the directory is used unlocked, and
         * no reaper can take its lock either, so none removes it */
        o->fd = fd;
        o->pid = (long)getpid();
        o->parent = malloc(strlen(parent) + 1);
        o->dir = malloc(strlen(dir) + 1);
        if (!o->parent || !o->dir) {
            fs_owned_drop(o);
            return cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "cannot make a directory under %s: out of memory", parent);
        }
        memcpy(o->parent, parent, strlen(parent) + 1);
        memcpy(o->dir, dir, strlen(dir) + 1);
        if (e == 0 && !fs_owned_intact(o)) {   /* reaped between the open and the lock */
            fs_owned_drop(o);
            continue;
        }
        return CUASYNC_OK;
    }
    return cuasync_fail(err, errlen, CUASYNC_E_IO, "cannot make a directory of its own under %s in 8 tries (%s)", parent,
                        e ? strerror(e) : "each was removed as it was made");
}

int cuasync_fs_pid_dir(const char *parent, char *out, size_t outlen, char *err, size_t errlen)
{
    DIR *d;
    struct dirent *e;
    struct fs_owned *o = NULL;
    size_t i;
    int rc;
    for (i = 0; i < FS_OWNED_MAX; i++) {
        if (fs_owned[i].parent && strcmp(fs_owned[i].parent, parent) == 0) {
            o = &fs_owned[i];
            break;
        }
    }
    if (o && o->pid == (long)getpid() && fs_owned_intact(o)) {
        if ((size_t)snprintf(out, outlen, "%s", o->dir) >= outlen)
            return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "directory path %s does not fit %zu bytes", o->dir, outlen);
        return CUASYNC_OK;
    }
    if (o) {   /* vanished (removed by hand, or by a cuasync before the lock), or a fork's parent's */
        if (o->dir && o->pid == (long)getpid()) rmdir(o->dir);
        fs_owned_drop(o);
    } else {
        for (i = 0; i < FS_OWNED_MAX && !o; i++) if (!fs_owned[i].parent) o = &fs_owned[i];
        if (!o)
            return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "more than %d directories of its own (parents) in one process",
                                FS_OWNED_MAX);
        o->fd = -1;
    }
    if ((rc = cuasync_fs_mkdirs(parent, err, errlen)) != CUASYNC_OK) return rc;
    if ((d = opendir(parent)) != NULL) {
        while ((e = readdir(d)) != NULL) fs_reap(parent, e->d_name);
        closedir(d);
    }
    if ((rc = fs_owned_make(o, parent, err, errlen)) != CUASYNC_OK) return rc;
    if ((size_t)snprintf(out, outlen, "%s", o->dir) >= outlen)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "directory path %s does not fit %zu bytes", o->dir, outlen);
    return CUASYNC_OK;
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
