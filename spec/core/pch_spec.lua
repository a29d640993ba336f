-- NVRTC's automatic precompiled header, as a sweep's compile workers use it (compiler.lua): the
-- PCH form of a program moves its defines behind its leading #include block, compiles to the
-- same PTX (up to the order of declarations), keeps the user's line numbers in errors, and is
-- not used where it could change the program.
local cuasync = require("cuasync")
local compiler = require("cuasync.compiler")
local H = require("helper")

local function sorted_lines(text)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = l end
  table.sort(t)
  return table.concat(t, "\n")
end

describe("precompiled headers", function()
  it("move the defines behind the leading #include block; CUASYNC_* defines stay on the command line", function()
    local p = cuasync.program{ file = "libcudacxx_pipelines.cu", arch = "sm_90a", defines = { STAGES = 3 }, watchdog = true }
    local f = assert(compiler.pch_form(p, "sm_90a"))
    local head = f.source:match("^(.-)typedef int cuasync_pch_stop_;\n#define STAGES 3\n#line (%d+) \"libcudacxx_pipelines.cu\"\n")
    assert.truthy(head, f.source:sub(1, 800))
    assert.truthy(head:find("#include <cooperative_groups/memcpy_async.h>", 1, true))
    local opts = table.concat(f.options, " ")
    assert.truthy(opts:find("-DCUASYNC_WATCHDOG=1", 1, true) and opts:find("-pch", 1, true), opts)
    assert.falsy(opts:find("-DSTAGES", 1, true), opts)
    -- not where it could change the program: a plan header first (it differs per variant), a
    -- define a device header names, no include block at all
    local map = cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 24, encode = false, dtype = "f32", dims = { 1024, 1024 }, box = { 64, 32 } }
    local P = cuasync.pipeline{ name = "tma", stages = 2, loads = { { map = map, name = "in" } }, producer = { warps = 1 }, consumer = { warps = 2 } }
    assert.is_nil(compiler.pch_form(P:program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = 32 } }, "sm_90a"))
    assert.is_nil(compiler.pch_form(cuasync.program{ file = "libcudacxx_pipelines.cu", defines = { tx_bytes = 1 } }, "sm_90a"))
    assert.is_nil(compiler.pch_form(cuasync.program{ source = 'extern "C" __global__ void k() {}', defines = { N = 1 } }, "sm_90a"))
    assert.error_matches(function() cuasync.program{ source = "", pch = 1 } end, "cuasync.program: pch must be a boolean %(got 1%)")
  end)

  it("compile to the PTX of the plain form (up to the order of declarations), with the user's line numbers in errors", function()
    local code = [[
      local cuasync = require("cuasync")
      local p = cuasync.program{ file = "libcudacxx_pipelines.cu", arch = "sm_90a", defines = { STAGES = 3 }, pch = os.getenv("PCH") == "1" }
      io.write(p:compile():ptx())
    ]]
    local ok1, plain = H.luajit(code, { CUASYNC_CACHE = "0", PCH = "0" })
    local ok2, pch = H.luajit(code, { CUASYNC_CACHE = "0", PCH = "1" })
    assert.is_true(ok1 and ok2, plain:sub(1, 300) .. pch:sub(1, 300))
    assert.truthy(#plain > 100000)
    assert.equal(sorted_lines(plain), sorted_lines(pch))
    local src = "#include <cuda/barrier>\n\n// a comment\nextern \"C\" __global__ void k(int *o)\n{\n  *o = N +;\n}\n"
    local ok, err = pcall(function() cuasync.program{ source = src, name = "bad.cu", arch = "sm_90a", defines = { N = 2 }, pch = true }:compile() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find(">    6 |   *o = N +;", 1, true), tostring(err))
  end)
end)

describe("the PCH directory", function()
  it("is one per process under the cache's pch/, and the directories of processes gone are removed", function()
    local dir = H.tmpdir()
    -- a pid that has exited (its shell is waited for before we look), with a file left in its directory
    local dead = assert(io.popen("sh -c 'echo $$'")):read("*l")
    assert.is_true(os.execute(("mkdir -p %s/pch/%s %s/pch/keep && touch %s/pch/%s/x.pch"):format(dir, dead, dir, dir, dead)) == 0)
    local code = [[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "build/?.so;" .. package.cpath
      local compiler = require("cuasync.compiler")
      local cuasync = require("cuasync")
      local p = cuasync.program{ file = "libcudacxx_pipelines.cu", arch = "sm_90a", defines = { STAGES = 2 } }
      local f = assert(compiler.pch_form(p, "sm_90a"))
      local ffi = require("ffi")
      pcall(ffi.cdef, "int getpid(void);")
      io.write(table.concat(f.options, " ") .. "\nPID " .. ffi.C.getpid() .. "\n")
    ]]
    local ok, out = H.luajit(code, { CUASYNC_CACHE_DIR = dir })
    assert.is_true(ok, out)
    local pid = out:match("PID (%d+)")
    assert.truthy(out:find("--pch-dir=" .. dir .. "/pch/" .. pid, 1, true), out)
    local list = H.sh("ls " .. dir .. "/pch")
    assert.truthy(list:find(pid, 1, true) and list:find("keep", 1, true), list)
    assert.falsy(list:find("^" .. dead .. "\n") or list:find("\n" .. dead .. "\n"), list)
  end)
end)

describe("the compile pool", function()
  it("lives for the whole sweep: a budgeted search of several batches spawns --jobs workers once, and they compile every point", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write([[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "build/?.so;" .. package.cpath
      local cuasync = require("cuasync")
      local cache = require("cuasync.cache")
      local S = cuasync.sweep{ name = "pool", host = true, rounds = 1, reps = 1, params = { stages = { 1, 2, 3, 4, 5, 6, 7, 8 }, chunk = { 1024, 2048, 4096 } },
        program = function(p) return cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { STAGES = p.stages, CHUNK = p.chunk } } end,
        build = function(p) return { run = function() end, bytes = p.chunk } end }
      S:run{ jobs = 2, quiet = true, force = true, strategy = "random", seed = 3, budget = { points = 20 } }
      local compiled = 0
      for _, r in ipairs(S.rows) do if r.compile_ms then compiled = compiled + 1 end end
      -- the pool is closed when S:run returns: every worker's stdin closed and its exit waited for
      print(("POOL workers=%d main_nvrtc=%d compiled=%d evaluated=%d"):format(S.result.compile_workers or 0, cache.stats.nvrtc, compiled, S.result.evaluated))
      print(table.concat(S.notes or {}, "\n"))
    ]])
    f:close()
    local p = io.popen(("CUASYNC_CACHE_DIR=%s luajit %s/s.lua 2>&1"):format(H.tmpdir(), dir))
    local out = p:read("*a")
    p:close()
    -- 20 points in batches of 8: three batches, two workers spawned once, no compile in the main process
    assert.truthy(out:find("POOL workers=2 main_nvrtc=0 compiled=20 evaluated=20", 1, true), out)
  end)
end)
