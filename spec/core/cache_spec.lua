-- The disk cache opens only regular files of bounded size, and recompiles around anything else;
-- a full disk is reported as such. Each case in its own process (a hang fails by time limit).
local H = require("helper")
local isolate = require("cuasync.tools.isolate")
local ffi = require("ffi")

local SRC = [[
  local c = require("cuasync")
  local p = c.program{ source = 'extern "C" __global__ void k(int *p) { *p = 7; }', name = "cache_case.cu", arch = "sm_90a" }
  local m = p:compile()
  print(#m:cubin() > 0, c.cache.stats.nvrtc, c.cache.stats.disk)
]]

local function key_path(dir)
  local ok, out = isolate.run(SRC .. '\nprint(require("cuasync.cache").path(p.key))', { env = { CUASYNC_CACHE_DIR = dir }, timeout_s = 120 })
  assert.is_true(ok, out)
  return out:match("\n([^\n]+%.entry)\n")
end

describe("disk cache", function()
  for _, case in ipairs({
    { "a directory", function(path) os.remove(path); local rc = os.execute("mkdir -p " .. path); assert(rc == 0 or rc == true, "mkdir -p " .. path) end },
    { "a FIFO", function(path) os.remove(path); os.execute("mkfifo " .. path) end },
    { "a symlink to /dev/zero", function(path) os.remove(path); os.execute("ln -s /dev/zero " .. path) end },
    { "a truncated file", function(path) local f = io.open(path, "r+b"); f:write("CUASYNC-CACHE 1 xx"); f:close() end },
  }) do
    it("recompiles when the entry is " .. case[1], function()
      local dir = H.tmpdir()
      local path = key_path(dir)
      assert.truthy(path, "no entry path")
      case[2](path)
      local ok, out = isolate.run(SRC, { env = { CUASYNC_CACHE_DIR = dir }, timeout_s = 60 })
      assert.is_true(ok, out)
      assert.truthy(out:find("true\t1\t0", 1, true), out)   -- compiled by NVRTC, nothing read from disk
      os.execute("rm -rf " .. dir)
    end)
  end

  it("reports a full disk as ENOSPC, not a stale errno", function()
    pcall(ffi.cdef, "int getpid(void);")
    local native = require("cuasync.native")
    local dir = H.tmpdir()
    local path = dir .. "/e.entry"
    os.execute(("ln -s /dev/full %s.tmp.%d"):format(path, ffi.C.getpid()))
    local rc = native.C.cuasync_fs_write_atomic(path, "data", 4, native.errbuf, native.ERRLEN)
    assert.are_not.equal(0, rc)
    assert.truthy(native.message():find("No space left on device", 1, true), native.message())
    os.execute("rm -rf " .. dir)
  end)
end)
