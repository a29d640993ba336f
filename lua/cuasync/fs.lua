-- The one home for files (DESIGN.md "Layers"): reads, checked writes (plain, appended, atomic),
-- directories, what a path is, listings and their sizes, locks, and the one sealed format: JSON
-- carrying the SHA-256 of its own text. Over native/cuasync_fs.c where Lua's io cannot do the
-- job or cannot report a failure (a full disk often shows only at the close). Core, not public:
-- the tools and the compile cache call it; nothing here starts a process (tools/isolate.lua does).
--   fs.read(path[, max])           -> text | nil, why
--   fs.write(path, data)           -> true | nil, why     fs.append(path, data), fs.write_atomic(path, data)
--   fs.mkdirs(dir)                 -> true | nil, why     fs.kind(path) -> "file", size | "dir" | "missing" | "other"
--   fs.list(dir[, suffix])         -> { names } | nil, why  fs.usage(dir) -> files, bytes | nil, why
--   fs.remove(path), fs.rename(from, to), fs.mkfifo(path) -> true | nil, why
--   fs.lock(path)                  -> handle (handle:unlock()) | nil, why
--   fs.sha256(s) -> hex; fs.seal(t) -> copy + sum; fs.sealed(t) -> boolean
--   fs.write_json(path, doc[, { atomic, sealed, pretty }]), fs.read_json(path[, { sealed }])
-- A failure is returned as nil and a message naming the call's path and the system's reason
-- ("cannot write /dev/full: No space left on device"); a wrong argument raises "cuasync.fs.<call>: ...".
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local json = require("cuasync.json")
require("cuasync.cdef.core")
require("cuasync.cdef.fs")
require("cuasync.cdef.hash")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}

local function path_arg(call, name, v) return util.cstring("fs." .. call, name, v) end

local function data_arg(call, v)
  if type(v) ~= "string" then util.fail("fs." .. call, ("data must be a string (got %s)"):format(type(v))) end
  return v
end

-- -- What a path is ------------------------------------------------------------------------

local size_out = ffi.new("long long[1]")
local KINDS = { [0] = "missing", "file", "dir", "other" }

-- "file" and its size, "dir", "missing" (or not stat'able) or "other" (FIFO, device, socket).
function M.kind(path)
  path_arg("kind", "path", path)
  local k = C.cuasync_fs_kind(path, size_out)
  if k == 1 then return "file", tonumber(size_out[0]) end
  return KINDS[k]
end

local function parent(path) return path:match("^(.*)/[^/]*$") end

-- A path as a message shows it: cut past 240 bytes (a message names the file, never repeats a
-- path of any length).
local function shown(p)
  if #p <= 240 then return p end
  return p:sub(1, 200) .. ("... (%d bytes)"):format(#p)
end
M.shown = shown

-- The system's reason in a message of Lua's io ("PATH: No such file or directory").
local function reason(err, path)
  return (tostring(err):gsub("^" .. path:gsub("%p", "%%%0") .. ": ", ""))
end

-- A write's failure, said as the reports say it where the directory is what is missing.
local function write_failed(path)
  local dir = parent(path)
  if dir and dir ~= "" and M.kind(dir) == "missing" then
    return ("cannot write %s: the directory %s does not exist"):format(shown(path), shown(dir))
  end
  return native.message()
end

-- -- Reading and writing ----------------------------------------------------------------------

-- The file's bytes (at most max of them when max is given), or nil and why.
function M.read(path, max)
  path_arg("read", "path", path)
  local f, err = io.open(path, "rb")
  if not f then return nil, ("cannot read %s: %s"):format(shown(path), reason(err, path)) end
  local text, rerr = f:read(max or "*a")
  f:close()
  if text == nil and rerr then return nil, ("cannot read %s: %s"):format(shown(path), tostring(rerr)) end
  return text or ""
end

-- One checked write: the arguments named by the call, every write(2) and the close checked.
local function checked(call, path, data, write)
  path_arg(call, "path", path)
  data_arg(call, data)
  if write() ~= 0 then return nil, write_failed(path) end
  return true
end

-- path holds data (created or truncated).
function M.write(path, data)
  return checked("write", path, data, function() return C.cuasync_fs_write(path, data, #data, 0, errbuf, ERRLEN) end)
end

-- data added at the end of path (created if missing); one short write is atomic in a FIFO.
function M.append(path, data)
  return checked("append", path, data, function() return C.cuasync_fs_write(path, data, #data, 1, errbuf, ERRLEN) end)
end

-- path replaced by data all at once (a temporary file beside it, then a rename): a reader sees
-- the old file or the new one, never half of one. The directory must exist (fs.mkdirs).
function M.write_atomic(path, data)
  return checked("write_atomic", path, data, function() return C.cuasync_fs_write_atomic(path, data, #data, errbuf, ERRLEN) end)
end

-- -- Directories ----------------------------------------------------------------------------

-- mkdir -p.
function M.mkdirs(dir)
  path_arg("mkdirs", "dir", dir)
  if C.cuasync_fs_mkdirs(dir, errbuf, ERRLEN) ~= 0 then return nil, native.message() end
  return true
end

-- The names in dir (ending with suffix, when given), sorted; nil and why when it cannot be listed.
function M.list(dir, suffix)
  path_arg("list", "dir", dir)
  if suffix ~= nil then path_arg("list", "suffix", suffix) end
  local size = 65536
  while true do
    local out = ffi.new("char[?]", size)
    local rc = C.cuasync_fs_list(dir, suffix or "", out, size, errbuf, ERRLEN)
    if rc == 0 then
      local names = {}
      for name in ffi.string(out):gmatch("[^\n]+") do names[#names + 1] = name end
      return names
    end
    -- the only failure a bigger buffer cures: the listing did not fit
    if rc ~= C.CUASYNC_E_INVALID or size >= 2 ^ 28 then return nil, native.message() end
    size = size * 4
  end
end

-- The regular files under dir, recursively, and their bytes (what `cuasync info` says of the cache).
function M.usage(dir)
  path_arg("usage", "dir", dir)
  local files, bytes = ffi.new("long long[1]"), ffi.new("long long[1]")
  if C.cuasync_fs_usage(dir, files, bytes, errbuf, ERRLEN) ~= 0 then return nil, native.message() end
  return tonumber(files[0]), tonumber(bytes[0])
end

local ENOENT = 2   -- POSIX leaves the number open; Linux, the BSDs and macOS all say 2

-- Gone: true when removed or already missing; nil and why otherwise (a non-empty directory).
function M.remove(path)
  path_arg("remove", "path", path)
  local ok, err, code = os.remove(path)
  if ok or code == ENOENT then return true end
  return nil, ("cannot remove %s: %s"):format(shown(path), reason(err, path))
end

-- A directory and everything under it gone (symlinks removed, never followed); true when gone or
-- already missing, nil and why for the first thing that cannot be removed.
function M.remove_tree(path)
  path_arg("remove_tree", "path", path)
  if M.kind(path) == "dir" then
    local names, why = M.list(path)
    if not names then return nil, why end
    for _, n in ipairs(names) do
      local ok, err = M.remove_tree(path .. "/" .. n)
      if not ok then return nil, err end
    end
  end
  return M.remove(path)
end

function M.rename(from, to)
  path_arg("rename", "from", from)
  path_arg("rename", "to", to)
  local ok, err = os.rename(from, to)
  if not ok then return nil, ("cannot rename %s to %s: %s"):format(shown(from), shown(to), reason(err, from)) end
  return true
end

function M.mkfifo(path)
  path_arg("mkfifo", "path", path)
  if C.cuasync_fs_mkfifo(path, errbuf, ERRLEN) ~= 0 then return nil, native.message() end
  return true
end

-- -- Locks ----------------------------------------------------------------------------------

-- An exclusive fcntl lock on path (created if missing), held until handle:unlock(), the
-- handle's collection or the process's exit. unlock is idempotent and is also the finaliser.
ffi.cdef("typedef struct cuasync_fs_lock_handle { int fd; } cuasync_fs_lock_handle;")
local Lock = {}
Lock.unlock = function(self)
  if self.fd >= 0 then
    C.cuasync_fs_unlock(self.fd)
    self.fd = -1
  end
end
local LockHandle = ffi.metatype("cuasync_fs_lock_handle", { __index = Lock, __gc = Lock.unlock })

function M.lock(path)
  path_arg("lock", "path", path)
  local fd = ffi.new("int[1]")
  if C.cuasync_fs_lock(path, fd, errbuf, ERRLEN) ~= 0 then return nil, native.message() end
  local h = LockHandle()
  h.fd = fd[0]
  return h
end

-- -- The sealed format: JSON with the SHA-256 of its text --------------------------------------

local hexbuf = ffi.new("char[65]")

-- The one checksum: the compile cache's entries and every sealed document use it.
function M.sha256(s)
  C.cuasync_sha256_hex(s, #s, hexbuf)
  return ffi.string(hexbuf, 64)
end

-- A table's checksum: the SHA-256 of its JSON without `sum` (json.lua writes keys sorted and
-- numbers exact, so the document read back encodes to the same bytes). The sweep store's entries
-- of version 3 were sealed this way before fs.lua existed, and still check.
local function checksum(t)
  local copy = {}
  for k, v in pairs(t) do if k ~= "sum" then copy[k] = v end end
  return M.sha256(json.encode(copy))
end

-- A shallow copy of t with its checksum in `sum`.
function M.seal(t)
  util.kind("fs.seal", "t", t, "table")
  local e = {}
  for k, v in pairs(t) do e[k] = v end
  e.sum = checksum(e)
  return e
end

-- Whether t carries a sum and it matches its content (false for anything else).
function M.sealed(t)
  return type(t) == "table" and type(t.sum) == "string" and t.sum == checksum(t)
end

local function json_opts(call, o, known)
  if o == nil then return {} end
  util.kind("fs." .. call, "opts", o, "table")
  util.known_fields("fs." .. call, o, known, "opts")
  return o
end

-- doc written as JSON (sealed: with its checksum; pretty: indented; atomic: through write_atomic).
function M.write_json(path, doc, opts)
  path_arg("write_json", "path", path)
  local o = json_opts("write_json", opts, { atomic = true, sealed = true, pretty = true })
  if o.sealed then doc = M.seal(doc) end
  local text = json.encode(doc, o.pretty) .. (o.pretty and "\n" or "")
  return (o.atomic and M.write_atomic or M.write)(path, text)
end

-- The document in path, or nil and why ("cannot read PATH: ...", "empty: truncated", "not JSON:
-- ...", "its checksum does not match: damaged"). sealed: the checksum is checked and removed.
function M.read_json(path, opts)
  path_arg("read_json", "path", path)
  local o = json_opts("read_json", opts, { sealed = true })
  local text, why = M.read(path)
  if not text then return nil, why end
  local doc, err = json.decode(text)
  if doc == nil then return nil, err end
  if o.sealed then
    if not M.sealed(doc) then return nil, "its checksum does not match: damaged, or not written sealed" end
    doc.sum = nil
  end
  return doc
end

return M
