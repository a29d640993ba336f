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

-- A LuaJIT snippet's preamble: the checkout's modules, a PCH program of libcudacxx_pipelines.cu by
-- its STAGES, and the PCH directory its compile uses (the --pch-dir of its PCH form).
local PRE = [[
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
  package.cpath = "build/?.so;" .. package.cpath
  local cuasync = require("cuasync")
  local compiler = require("cuasync.compiler")
  local fs = require("cuasync.fs")
  local function variant(i)
    return cuasync.program{ file = "libcudacxx_pipelines.cu", arch = "sm_90a", defines = { STAGES = i }, pch = true }
  end
  local function pch_dir(p)
    return table.concat(assert(compiler.pch_form(p, "sm_90a")).options, " "):match("%-%-pch%-dir=(%S+)")
  end
  local ffi = require("ffi")
  pcall(ffi.cdef, "int getpid(void);")
]]

-- unshare(1) runs a process in a PID namespace of its own (pid 1 there), as a container does;
-- where it is refused (no root, no user namespaces) the spec that needs it is pending, counted.
local unshare_ok, unshare_why = (function()
  local out, rc = H.sh("unshare --pid --fork --mount-proc true")
  return rc == 0, out:gsub("%s+$", "")
end)()
local unshare_it = unshare_ok and it
  or function(name) pending(name .. " [skipped: unshare --pid --fork --mount-proc refused: " .. unshare_why .. "]") end

describe("the PCH directory", function()
  it("is one per process under the cache's pch/, named by host and pid, and the one of a process gone is removed by the next", function()
    local dir = H.tmpdir()
    -- directories with no lock file (one being made; a cuasync before the lock named them by pid
    -- alone) are left alone, whatever their name says
    local dead = H.sh("sh -c 'echo $$'"):match("%d+")
    assert.equal(0, select(2, H.sh(("mkdir -p %s/pch/%s %s/pch/keep && touch %s/pch/%s/x.pch"):format(dir, dead, dir, dir, dead))))
    local code = PRE .. [[
      io.write("DIR " .. pch_dir(variant(2)) .. "\nPID " .. ffi.C.getpid() .. "\n")
    ]]
    local ok, out = H.luajit(code, { CUASYNC_CACHE_DIR = dir })
    assert.is_true(ok, out)
    local gone = out:match("DIR (%S+)")
    assert.equal("dir", H.sh("test -d " .. gone .. " && echo dir"):match("%S+"))
    ok, out = H.luajit(code, { CUASYNC_CACHE_DIR = dir })
    assert.is_true(ok, out)
    local mine, pid = out:match("DIR (%S+)"), out:match("PID (%d+)")
    -- <cache>/pch/<host>.<pid>.<unique>: the pid says whose, and no other host or namespace has the name
    assert.truthy(mine:find("^" .. H.literal(dir) .. "/pch/[%w%-]+%." .. pid .. "%.%w+$"), mine)
    assert.equal("gone", H.sh("test -e " .. gone .. " || echo gone"):match("%S+"), gone)
    assert.equal("dir", H.sh("test -d " .. mine .. " && echo dir"):match("%S+"), mine)
    assert.equal("kept", H.sh(("test -f %s/pch/%s/x.pch && test -d %s/pch/keep && echo kept"):format(dir, dead, dir)):match("%S+"))
  end)

  unshare_it("defect 2: is left alone by a process in another PID namespace while its owner lives, and no two namespaces share one", function()
    local dir = H.tmpdir()
    local ns = dir .. "/ns.lua"
    H.write(ns, PRE .. [[
      local p = variant(7)
      p:compile()
      io.write("NSDIR " .. pch_dir(p) .. "\n")
    ]])
    -- this process compiles, a process in a PID namespace of its own (pid 1 there) compiles with
    -- the same cache, then this process compiles the other variants (the issue's repro)
    local ok, out = H.luajit(PRE .. ([[
      local isolate = require("cuasync.tools.isolate")
      local mine = pch_dir(variant(1))
      io.write("MINE " .. mine .. "\n")
      for i = 1, 4 do
        local done, err = pcall(function() variant(i):compile() end)
        io.write(("VARIANT %%d %%s\n"):format(i, done and "ok" or tostring(err):sub(1, 300)))
        if i == 1 then
          local _, o = isolate.command({ "unshare", "--pid", "--fork", "--mount-proc", "luajit", %q })
          io.write(o)
          io.write("AFTER " .. fs.kind(mine) .. "\n")
        end
      end
    ]]):format(ns), { CUASYNC_CACHE_DIR = dir, CUASYNC_CACHE = "0" }, 300)
    assert.is_true(ok, out)
    local mine, first = out:match("MINE (%S+)"), out:match("NSDIR (%S+)")
    assert.truthy(mine and first, out)
    assert.truthy(out:find("AFTER dir\n", 1, true), out)
    for i = 1, 4 do assert.truthy(out:find(("VARIANT %d ok\n"):format(i), 1, true), out) end
    assert.are_not.equal(mine, first)
    -- a second namespace: pid 1 again, never the first one's directory
    local out2, rc = H.sh(("CUASYNC_CACHE_DIR=%s CUASYNC_CACHE=0 unshare --pid --fork --mount-proc luajit %s"):format(dir, ns))
    assert.equal(0, rc, out2)
    local second = out2:match("NSDIR (%S+)")
    assert.truthy(second, out2)
    assert.are_not.equal(first, second)
  end)

  it("defect 2: is made again when it vanished, rather than failing the compile", function()
    local dir = H.tmpdir()
    local ok, out = H.luajit(PRE .. [[
      local p = variant(1)
      p:compile()
      local mine = pch_dir(p)
      assert(os.execute("rm -rf '" .. mine .. "'") == 0)
      local done, err = pcall(function() variant(2):compile() end)
      io.write("SECOND " .. (done and "ok" or tostring(err):sub(1, 300)) .. "\n")
      local again = pch_dir(variant(3))
      io.write("AGAIN " .. fs.kind(again) .. "\n")
    ]], { CUASYNC_CACHE_DIR = dir, CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.truthy(out:find("SECOND ok\n", 1, true), out)
    assert.truthy(out:find("AGAIN dir\n", 1, true), out)
  end)

  it("defect 2: a compile whose PCH directory vanished under it is done again without PCH", function()
    local dir = H.tmpdir()
    -- the directory goes between the PCH form and NVRTC's read of the command line
    local ok, out = H.luajit(PRE .. ([[
      local real = compiler.pch_form
      compiler.pch_form = function(p, arch)
        local f = real(p, arch)
        for i, o in ipairs(f.options) do
          if o:match("^%%-%%-pch%%-dir=") then f.options[i] = "--pch-dir=" .. %q end
        end
        return f
      end
      local done, err = pcall(function() return variant(5):compile():ptx() end)
      io.write("COMPILED " .. (done and #err > 100000 and "ok" or tostring(err):sub(1, 300)) .. "\n")
    ]]):format(H.missing("pch/vanished")), { CUASYNC_CACHE_DIR = dir, CUASYNC_CACHE = "0" })
    assert.is_true(ok, out)
    assert.truthy(out:find("COMPILED ok\n", 1, true), out)
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
