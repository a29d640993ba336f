-- Device buffers and pinned host buffers: metatyped handles, freed by :close() or the GC.
-- data.lua adds the test-data methods (fill_random, poison) to both classes.
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local util = require("cuasync.util")
local handle = require("cuasync.handle")
local watchdog = require("cuasync.watchdog")
local streams = require("cuasync.stream")
local capture = require("cuasync.capture")
require("cuasync.cdef.memory")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[
typedef struct cuasync_buffer { CUdeviceptr ptr; size_t nbytes; int device; int view; } cuasync_buffer;
typedef struct cuasync_host_buffer { void *ptr; size_t nbytes; } cuasync_host_buffer;
]]

local M = {}
local Buffer, HostBuffer = {}, {}
local buffer_t, host_buffer_t

local function open_buffer(where, b)
  if b.ptr == 0 then util.fail(where, handle.dead("buffer", b)) end
end

-- A (pointer, bytes) view of what upload/download may take: string, host buffer, cdata.
local function host_view(where, src, bytes)
  local t = type(src)
  if t == "string" then
    if bytes and bytes > #src then
      util.fail(where, ("bytes = %d but the string holds %d"):format(bytes, #src))
    end
    return src, bytes or #src
  elseif ffi.istype(host_buffer_t, src) then
    if src.ptr == nil then util.fail(where, handle.dead("host buffer", src)) end
    local n = tonumber(src.nbytes)
    if bytes and bytes > n then
      util.fail(where, ("bytes = %d but the host buffer holds %d"):format(bytes, n))
    end
    return src.ptr, bytes or n
  elseif t == "cdata" then
    -- a pointer has no extent: its bytes must be given, never guessed
    local is_pointer = tostring(ffi.typeof(src)):match("%*>$") ~= nil
    local size = not is_pointer and ffi.sizeof(src) or nil
    if not bytes then
      if not size then util.fail(where, "bytes is required when the host data is a pointer") end
      bytes = size
    elseif size and bytes > size then
      util.fail(where, ("bytes = %d but the host array holds %d"):format(bytes, size))
    end
    return src, bytes
  end
  util.fail(where, ("host data must be a string, a host buffer or cdata (got %s)"):format(t))
end

local function range(where, b, bytes, offset)
  offset = offset or 0
  util.count(where, "offset", offset, true)
  util.count(where, "bytes", bytes, true)
  local size = tonumber(b.nbytes)
  if offset + bytes > size then
    util.fail(where, ("offset %d + bytes %d exceeds the buffer's %d bytes"):format(offset, bytes, size))
  end
  return offset
end

-- The stream a copy or fill is enqueued on: nil (the default stream; the host copies wait for
-- it) or a cuasync.stream(). Inside cuasync.graph's function it must be the capturing stream
-- (the operation becomes the graph's next node); host memory the graph will read or write at
-- each replay must be a host buffer, which the graph keeps alive.
local function on_stream(where, stream, host, keep, info)
  local h = streams.handle(stream)
  if capture.state.active then
    if host ~= nil and not ffi.istype(host_buffer_t, host) then
      util.fail(where, ("cannot run inside cuasync.graph's function with %s host memory: a graph replays the copy from the same address every launch, so the host side must be a cuasync.host_alloc buffer (the graph keeps it alive)"):format(
        type(host) == "string" and "a string as" or "cdata as"))
    end
    capture.enqueue(where, where == "buffer.fill" and "the fill" or "the copy", h, keep, false, info)
  end
  return h
end

-- :upload(src[, bytes[, offset[, stream]]]): host data (string, host buffer, cdata array or
-- pointer + bytes) or another device buffer into this one at offset. Without a stream, a host
-- copy is done when upload returns; on a stream it is enqueued there.
function Buffer:upload(src, bytes, offset, stream)
  open_buffer("buffer.upload", self)
  if bytes ~= nil then util.count("buffer.upload", "bytes", bytes, true) end
  if ffi.istype(buffer_t, src) then
    open_buffer("buffer.upload", src)
    bytes = bytes or tonumber(src.nbytes)
    if bytes > tonumber(src.nbytes) then
      util.fail("buffer.upload", ("bytes = %d but the source buffer holds %d"):format(bytes, tonumber(src.nbytes)))
    end
    offset = range("buffer.upload", self, bytes, offset)
    -- queued on the stream: ordered with kernels and later copies, no host wait
    local h = on_stream("buffer.upload", stream, nil, { self, src },
      { kind = "memcpy", dst = self, dst_offset = offset, src = src, src_offset = 0, bytes = bytes })
    native.check(C.cuasync_mem_dtod(self.ptr + offset, src.ptr, bytes, h, errbuf, ERRLEN))
    capture.added()
    return self
  end
  local p, n = host_view("buffer.upload", src, bytes)
  offset = range("buffer.upload", self, n, offset)
  if stream == nil and not capture.state.active then
    native.check(C.cuasync_mem_htod(self.ptr + offset, p, n, errbuf, ERRLEN))
  else
    local h = on_stream("buffer.upload", stream, src, { self, src },
      { kind = "memcpy", dst = self, dst_offset = offset, src = src, src_offset = 0, bytes = n })
    native.check(C.cuasync_mem_htod_async(self.ptr + offset, p, n, h, errbuf, ERRLEN))
    capture.added()
  end
  return self
end

-- A ctype and the VLA of it, built from the type's name: a "$[?]" template gave a wrongly sized
-- array on the H200 run (LuaJIT 2.1.0-beta3 after other templates), and a heap overrun followed.
local function element_type(where, ctype)
  local ok, ct = pcall(ffi.typeof, ctype)
  if not ok then util.fail(where, ("unknown ctype %s"):format(util.describe(ctype))) end
  local name = tostring(ct):match("^ctype<(.*)>$")
  local ok2, vla = pcall(ffi.typeof, (name or "?") .. "[?]")
  if not ok2 then util.fail(where, ("cannot make an array of %s"):format(tostring(ct))) end
  return ct, vla, name
end

-- :download([ctype[, n]]) -> a new cdata array ctype[n] (default uint8_t, the whole buffer).
function Buffer:download(ctype, n)
  open_buffer("buffer.download", self)
  capture.refuse("buffer.download", "a download returns the data now, and a capture only records work to replay (download after G:launch, or buf:download_to(host_buffer, bytes, offset, s) inside)")
  local ct, vla = element_type("buffer.download", ctype or "uint8_t")
  local esize = ffi.sizeof(ct)
  if not esize or esize == 0 then util.fail("buffer.download", "ctype has no size") end
  local size = tonumber(self.nbytes)
  n = n or math.floor(size / esize)
  util.count("buffer.download", "n", n, true)
  if n * esize > size then
    util.fail("buffer.download", ("%d elements of %d bytes exceed the buffer's %d bytes"):format(n, esize, size))
  end
  local out = ffi.new(vla, n)
  -- the driver writes n * esize bytes here: never into an array of any other size
  if ffi.sizeof(out) ~= n * esize then
    error(("cuasync.buffer.download: internal error: %s[%d] has %d bytes, expected %d"):format(
          tostring(ct), n, ffi.sizeof(out), n * esize), 2)
  end
  -- a download waits for the kernels before it: a watched kernel's hang is raised here
  if n > 0 then watchdog.check(C.cuasync_mem_dtoh(out, self.ptr, n * esize, errbuf, ERRLEN)) end
  return out
end

-- :download_to(dst[, bytes[, offset[, stream]]]): into caller-owned host memory (host buffer or
-- cdata). Without a stream it is done when it returns; on a stream it is enqueued there (dst
-- must then stay alive until the stream's work is done: a host buffer is the safe choice).
function Buffer:download_to(dst, bytes, offset, stream)
  open_buffer("buffer.download_to", self)
  if type(dst) == "string" then util.fail("buffer.download_to", "dst must be writable host memory (got string)") end
  local p, n = host_view("buffer.download_to", dst, bytes)
  offset = range("buffer.download_to", self, n, offset)
  if stream == nil and not capture.state.active then
    watchdog.check(C.cuasync_mem_dtoh(p, self.ptr + offset, n, errbuf, ERRLEN))
  else
    local h = on_stream("buffer.download_to", stream, dst, { self, dst },
      { kind = "memcpy", dst = dst, dst_offset = 0, src = self, src_offset = offset, bytes = n })
    native.check(C.cuasync_mem_dtoh_async(p, self.ptr + offset, n, h, errbuf, ERRLEN))
    capture.added()
  end
  return dst
end

-- :fill(byte[, bytes[, offset[, stream]]])
function Buffer:fill(byte, bytes, offset, stream)
  open_buffer("buffer.fill", self)
  if not util.is_integer(byte) or byte < 0 or byte > 255 then
    util.fail("buffer.fill", ("byte must be an integer 0..255 (got %s)"):format(util.describe(byte)))
  end
  bytes = bytes or tonumber(self.nbytes)
  offset = range("buffer.fill", self, bytes, offset)
  if stream == nil and not capture.state.active then
    native.check(C.cuasync_mem_set8(self.ptr + offset, byte, bytes, errbuf, ERRLEN))
  else
    local h = on_stream("buffer.fill", stream, nil, self,
      { kind = "memset", dst = self, dst_offset = offset, value = byte, bytes = bytes })
    native.check(C.cuasync_mem_set8_async(self.ptr + offset, byte, bytes, h, errbuf, ERRLEN))
    capture.added()
  end
  return self
end

function Buffer:size()
  return tonumber(self.nbytes)
end

buffer_t = handle.define("cuasync_buffer", {
  methods = Buffer,
  live = function(b) return b.ptr ~= 0 end,
  -- a view's memory belongs to its module: closing it only forgets the address
  kill = function(b) local p = b.ptr; b.ptr = 0; return b.view == 0 and p or nil end,
  release = function(p) if p == nil then return 0 end return C.cuasync_mem_free(p, errbuf, ERRLEN) end,
  tostring = function(b)
    return ("cuasync.buffer(%d bytes at 0x%x%s%s)"):format(tonumber(b.nbytes), tonumber(b.ptr),
      b.view ~= 0 and ", a view" or "", b.ptr == 0 and ", closed" or "")
  end,
})

-- A device address given as an integer, a 64-bit integer cdata (CUdeviceptr) or a pointer cdata;
-- nil otherwise (a string, a host array), and nil, "null" for address 0.
local u64, i64 = ffi.typeof("uint64_t"), ffi.typeof("int64_t")
function M.address(p)
  local a
  if util.is_integer(p) and p >= 0 then
    a = ffi.cast(u64, p)
  elseif type(p) == "cdata" and (ffi.istype(u64, p) or ffi.istype(i64, p)) then
    if p < 0 then return nil end
    a = ffi.cast(u64, p)
  elseif type(p) == "cdata" and tostring(ffi.typeof(p)):match("%*>$") then
    a = ffi.cast(u64, p)
  else
    return nil
  end
  if a == 0 then return nil, "null" end
  return a
end

-- Device memory an argument names: a buffer (its address and size) or an address (size nil).
-- Raises "cuasync.<where>: <name> ..." for a closed buffer or anything that is not an address.
function M.memory(where, name, v)
  if ffi.istype(buffer_t, v) then
    if v.ptr == 0 then util.fail(where, ("%s is a closed buffer"):format(name)) end
    return v.ptr, tonumber(v.nbytes)
  end
  local a = M.address(v)
  if not a then util.fail(where, ("%s must be a device buffer or address (got %s)"):format(name, util.describe(v))) end
  return a, nil
end

-- A view of device memory owned by something else (a module's global): the same methods, and
-- close only forgets the address. `owner` is kept alive by the caller.
function M.view(ptr, bytes, dev)
  return buffer_t(ptr, bytes, dev, 1)
end

function M.alloc(bytes)
  util.count("alloc", "bytes", bytes)
  local dev = device.current()
  local p = ffi.new("CUdeviceptr[1]")
  native.check(C.cuasync_mem_alloc(p, bytes, errbuf, ERRLEN))
  return buffer_t(p[0], bytes, dev.ordinal, 0)
end

-- Pinned host memory: fast, asynchronous-capable copies.
function HostBuffer:size() return tonumber(self.nbytes) end

-- A typed pointer into the host buffer.
function HostBuffer:as(ctype)
  if self.ptr == nil then util.fail("host_buffer.as", handle.dead("host buffer", self)) end
  local _, _, name = element_type("host_buffer.as", ctype)
  if name:match("%*%s*$") then   -- as("float *") would give a float ** that takes numbers for pointers
    util.fail("host_buffer.as", ("ctype must be the element type, not a pointer (got %q): as(%q) returns a %s"):format(
      ctype, (name:gsub("%s*%*%s*$", "")), name))
  end
  return ffi.cast(name .. " *", self.ptr)
end

host_buffer_t = handle.define("cuasync_host_buffer", {
  methods = HostBuffer,
  live = function(b) return b.ptr ~= nil end,
  kill = function(b) local p = b.ptr; b.ptr = nil; return p end,
  release = function(p) return C.cuasync_mem_free_host(p, errbuf, ERRLEN) end,
  tostring = function(b) return ("cuasync.host_buffer(%d bytes%s)"):format(tonumber(b.nbytes), b.ptr == nil and ", closed" or "") end,
})

function M.host_alloc(bytes)
  util.count("host_alloc", "bytes", bytes)
  device.current()
  local p = ffi.new("void *[1]")
  native.check(C.cuasync_mem_alloc_host(p, bytes, errbuf, ERRLEN))
  return host_buffer_t(p[0], bytes)
end

M.buffer_t, M.host_buffer_t = buffer_t, host_buffer_t
M.Buffer, M.HostBuffer = Buffer, HostBuffer   -- the method tables (data.lua adds to them)
return M
