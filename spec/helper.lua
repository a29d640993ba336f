-- Shared by the specs: GPU detection (GPU specs skip, counted, where no device is found, and fail
-- instead with CUASYNC_REQUIRE_GPU=1), fresh random data, subprocesses, a scratch cache dir.
local ffi = require("ffi")
local bit = require("bit")
local cuasync = require("cuasync")

local H = {}

pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

H.gpu, H.why = cuasync.available()
if not H.gpu and os.getenv("CUASYNC_REQUIRE_GPU") == "1" then
  error("CUASYNC_REQUIRE_GPU=1 but no GPU is usable: " .. tostring(H.why), 0)
end

-- gpu_it(it, pending): `it` where a GPU is present, else a pending spec saying why.
function H.gpu_it(it, pending)
  if H.gpu then return it end
  return function(name) pending(name .. " [skipped: " .. tostring(H.why) .. "]") end
end

-- xorshift64*, seeded fresh each run: every check sees data it has not seen before.
local state = ffi.new("uint64_t[1]", bit.bxor(os.time(), math.floor(tonumber(cuasync.now_ns()) % 2^31)) + 0x9E3779B97F4A7C15ULL)
function H.seed() return state[0] end
function H.random_u32()
  local x = state[0]
  x = bit.bxor(x, bit.rshift(x, 12)); x = bit.bxor(x, bit.lshift(x, 25)); x = bit.bxor(x, bit.rshift(x, 27))
  state[0] = x
  return tonumber(bit.rshift(x * 0x2545F4914F6CDD1DULL, 32))
end

-- n random bytes (n a multiple of 4 is fastest).
function H.random_bytes(n)
  local out = ffi.new("uint8_t[?]", n)
  local words = math.floor(n / 4)
  local w = ffi.cast("uint32_t *", out)
  for i = 0, words - 1 do w[i] = H.random_u32() end
  for i = words * 4, n - 1 do out[i] = H.random_u32() % 256 end
  return out
end

-- n fresh random u32 in a device buffer: returns the buffer and the host copy.
function H.random_words(n)
  local h = ffi.new("uint32_t[?]", n)
  for i = 0, n - 1 do h[i] = H.random_u32() end
  local b = cuasync.alloc(n * 4)
  b:upload(h, n * 4)
  return b, h
end

-- Run a LuaJIT snippet in a new process with extra environment; returns ok, stdout+stderr.
local isolate = require("cuasync.tools.isolate")
function H.luajit(code, env, timeout_s)
  local ok, out = isolate.run(code, { env = env, timeout_s = timeout_s })
  return ok, out
end

-- A shell command's output (stdout and stderr) and exit code (isolate.command: the one way a
-- process is started).
function H.sh(cmd)
  local _, out, rc = isolate.command(cmd)
  return out, rc
end

-- A file's text, or nil where it cannot be read; write a file's text.
function H.read(path)
  local f = io.open(path)
  if not f then return nil end
  local t = f:read("*a")
  f:close()
  return t
end

function H.write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A fresh, empty directory, under one root per spec process that is removed when the process
-- closes its Lua state (busted exits with os.exit(code, true): finalizers run), so a suite run
-- leaves nothing in /tmp.
local root, made = nil, 0
function H.tmpdir()
  if not root then
    root = os.tmpname()
    os.remove(root)
    local quoted = "'" .. root .. "'"
    H.sweeper = ffi.gc(ffi.new("char[1]"), function() os.execute("rm -rf " .. quoted) end)
  end
  made = made + 1
  local d = ("%s/d%d"):format(root, made)
  local rc = os.execute("mkdir -p " .. d)
  assert(rc == 0 or rc == true, "mkdir -p " .. d .. " failed")
  return d
end

-- A path that does not exist: under this process's scratch root, in a folder never made (a spec
-- must not depend on an absolute path such as /nonexistent staying absent on the machine).
function H.missing(name)
  H.tmpdir()
  return root .. "/missing/" .. name
end

-- A Lua pattern that matches s literally.
function H.literal(s) return (s:gsub("%p", "%%%0")) end

return H
