/* cuasync_fs.h — the file operations Lua's io lacks or cannot report reliably: directories,
 * checked plain and atomic writes, what a path is, listings and their sizes, FIFOs, locks, and
 * per-process directories. lua/cuasync/fs.lua is their one Lua home. */
#ifndef CUASYNC_FS_H
#define CUASYNC_FS_H

#include "cuasync.h"

/* mkdir -p. */
int cuasync_fs_mkdirs(const char *dir, char *err, size_t errlen);
/* Write data to a temporary file beside path, then rename it over path: a reader sees the old
 * file, the new one, or none, never half of one. Every write and the close are checked (a full
 * disk often shows only at the close); no fsync: a torn file after a crash fails its checksum. */
int cuasync_fs_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* Write data to path (created, truncated; appended to when append is not 0), every write(2) and
 * the close checked: a short write or a full disk is an error naming path and errno's text. */
int cuasync_fs_write(const char *path, const void *data, size_t len, int append, char *err, size_t errlen);
/* 0 and the size when path is a regular file (symlinks followed); -1 when it cannot be
 * stat'ed, -2 when it is something else (a directory, FIFO or device is never opened). */
int cuasync_fs_regular_size(const char *path, long long *size);
/* What path is (symlinks followed): 0 missing (or not stat'able), 1 a regular file (its size in
 * *size), 2 a directory, 3 anything else (FIFO, device, socket). */
int cuasync_fs_kind(const char *path, long long *size);
/* The regular files under dir, recursively (symlinks not followed), and the sum of their sizes. */
int cuasync_fs_usage(const char *dir, long long *files, long long *bytes, char *err, size_t errlen);
/* Make a FIFO at path (mode 0600). */
int cuasync_fs_mkfifo(const char *path, char *err, size_t errlen);
/* The names in dir ending with suffix, sorted, one per line, into out. */
int cuasync_fs_list(const char *dir, const char *suffix, char *out, size_t outlen, char *err, size_t errlen);
/* This process's own directory under parent (created with it), into out: parent/<host>.<pid>.<XXXXXX>,
 * a name no other process has, on any node or in any PID namespace. The process holds an fcntl lock
 * on its lock file for its life; a directory under parent whose lock can be taken (its owner is
 * gone) is removed when this process's is made, one with no lock file is left alone. The same
 * directory on every later call, made again (and the others reaped) if it vanished. For files that
 * must not be shared between processes (NVRTC's automatic precompiled headers). */
int cuasync_fs_pid_dir(const char *parent, char *out, size_t outlen, char *err, size_t errlen);
/* Take an exclusive lock on path (created if missing), waiting for it; *fd holds it until
 * cuasync_fs_unlock(*fd) or the process's exit. For read-modify-write of shared files (a
 * sweep's result store written by concurrent runs). */
int cuasync_fs_lock(const char *path, int *fd, char *err, size_t errlen);
void cuasync_fs_unlock(int fd);

#endif
