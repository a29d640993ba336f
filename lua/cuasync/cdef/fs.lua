-- Declarations of native/cuasync_fs.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
int cuasync_fs_mkdirs(const char *dir, char *err, size_t errlen);
int cuasync_fs_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
int cuasync_fs_write(const char *path, const void *data, size_t len, int append, char *err, size_t errlen);
int cuasync_fs_regular_size(const char *path, long long *size);
int cuasync_fs_kind(const char *path, long long *size);
int cuasync_fs_usage(const char *dir, long long *files, long long *bytes, char *err, size_t errlen);
int cuasync_fs_mkfifo(const char *path, char *err, size_t errlen);
int cuasync_fs_list(const char *dir, const char *suffix, char *out, size_t outlen, char *err, size_t errlen);
int cuasync_fs_pid_dir(const char *parent, char *out, size_t outlen, char *err, size_t errlen);
int cuasync_fs_lock(const char *path, int *fd, char *err, size_t errlen);
void cuasync_fs_unlock(int fd);
]]

ffi.cdef(declarations)
return declarations
