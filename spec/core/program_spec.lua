-- cuasync.program: arguments, compile errors, name expressions, and the compile cache.
local cuasync = require("cuasync")
local H = require("helper")

local SRC = 'extern "C" __global__ void k(int *p) { p[threadIdx.x] = VALUE; }\n'

describe("cuasync.program", function()
  describe("arguments", function()
    local cases = {
      { nil, "cuasync.program: expects a table {source = ... or file = ...} (got nil)" },
      { {}, "cuasync.program: source or file is required" },
      { { source = "x", file = "y" }, "cuasync.program: give source or file, not both" },
      { { source = 42 }, "cuasync.program: source must be a string (got number)" },
      { { file = "no/such/file.cu" }, 'cuasync.program: file "no/such/file.cu" not found (looked in the current directory and ' .. cuasync.kernels_dir() .. ")" },
      { { source = "x", sources = "y" }, "cuasync.program: unknown field 'sources' (fields: arch, defines, expressions, file, headers, name, options, pch, source, trace, watchdog)" },
      { { source = "x", defines = { ["1X"] = 1 } }, 'cuasync.program: defines key "1X" is not a C identifier' },
      { { source = "x", defines = { X = {} } }, "cuasync.program: defines.X must be a number, string or boolean (got table)" },
      { { source = "x", defines = { X = 0 / 0 } }, "cuasync.program: defines.X is not finite" },
      { { source = "x", options = { 3 } }, "cuasync.program: options[1] must be a string (got number)" },
      { { source = "x", options = "-O3" }, "cuasync.program: options must be a table (got string)" },
      { { source = "x", options = { "-arch=sm_80" } }, 'cuasync.program: options[1] = "-arch=sm_80" sets the architecture: use arch = instead' },
      { { source = "x", headers = { ["a.cuh"] = 1 } }, "cuasync.program: headers must map include names to source strings" },
      { { source = "x", expressions = { 1 } }, "cuasync.program: expressions[1] must be a string (got number)" },
      { { source = "x", arch = "sm90" }, 'cuasync.program: arch must be "auto", "sm_XY[a]" or "compute_XY[a]" (got "sm90")' },
      { { source = "a\0b" }, "cuasync.program: source has byte 0x00 at offset 1, which NVRTC cannot read (C strings end at NUL)" },
    }
    for i, c in ipairs(cases) do
      it("rejects bad input " .. i .. ": " .. c[2]:sub(18, 70), function()
        assert.has.error(function() cuasync.program(c[1]) end, c[2])
      end)
    end
  end)

  it("reports a compile error with the log and the failing lines, numbered", function()
    local src = "// line 1\nextern \"C\" __global__ void k(int *p) {\n  p[0] = undefined_name;\n}\n"
    local ok, err = pcall(function() cuasync.program{ source = src, name = "bad.cu", arch = "sm_90a" }:compile() end)
    assert.is_false(ok)
    assert.truthy(err:find("cuasync.program: bad.cu failed to compile for sm_90a (nvrtcCompileProgram: NVRTC_ERROR_COMPILATION", 1, true), err)
    assert.truthy(err:find('bad.cu(3): error: identifier "undefined_name" is undefined', 1, true), err)
    assert.truthy(err:find(">    3 |   p[0] = undefined_name;", 1, true), err)
    assert.truthy(err:find("     2 | extern", 1, true), err)
  end)

  it("passes defines, in-memory headers and name expressions", function()
    local src = '#include "val.cuh"\ntemplate <int N> __global__ void t(int *p) { p[0] = N + VAL + EXTRA; }\n'
    local prog = cuasync.program{ source = src, arch = "sm_90a", headers = { ["val.cuh"] = "#define VAL 40\n" },
                                  defines = { EXTRA = 2, FLAG = true }, expressions = { "t<5>" } }
    local mod = prog:compile()
    local lowered = mod:lowered("t<5>")
    assert.equal("_Z1tILi5EEvPi", lowered)
    assert.truthy(mod:ptx():find(lowered, 1, true))
    assert.truthy(mod:ptx():find("mov.b32 	%r1, 47;", 1, true) or mod:ptx():find("47", 1, true))
  end)

  it("turns NVRTC's own cache off for each compile where NVRTC has --no-cache (12.9+): its cache trace prints nothing, and ptxas reports", function()
    local ffi = require("ffi")
    local native = require("cuasync.native")
    require("cuasync.cdef.toolkit")
    local major, minor = ffi.new("int[1]"), ffi.new("int[1]")
    assert.equal(0, native.C.cuasync_nvrtc_version(major, minor, native.errbuf, native.ERRLEN))
    -- a source no other spec compiles, so that cuasync's own cache has not seen it this run
    local src = ('extern "C" __global__ void k(float *x) { x[threadIdx.x] = %d.0f; }\n'):format(os.time() % 100000)
    local prog = cuasync.program{ source = src, name = "nocache.cu", arch = "sm_90a", options = { "--enable-cache-trace" } }
    if major[0] > 12 or (major[0] == 12 and minor[0] >= 9) then
      assert.falsy(prog:log():find("[nvrtc cache]", 1, true), prog:log())
    end
    local r, why = prog:resources()
    assert.truthy(r.k, tostring(why))
    assert.truthy(r.k.registers > 0)
  end)

  describe("cache", function()
    local dir
    local old_getenv = os.getenv
    before_each(function()
      dir = H.tmpdir()
      os.getenv = function(k) if k == "CUASYNC_CACHE_DIR" then return dir end return old_getenv(k) end
      cuasync.cache.clear_memory()
    end)
    after_each(function()
      os.getenv = old_getenv
      os.execute("rm -rf " .. dir)
    end)

    local function compiles(spec)
      local before = cuasync.cache.stats.nvrtc
      cuasync.program(spec):ptx()
      return cuasync.cache.stats.nvrtc - before
    end
    local base = function(extra)
      local s = { source = SRC, arch = "sm_90a", defines = { VALUE = 7 }, headers = { ["h.cuh"] = "// h\n" } }
      for k, v in pairs(extra or {}) do s[k] = v end
      return s
    end

    it("hits in memory, then on disk in a new process", function()
      assert.equal(1, compiles(base()))
      assert.equal(0, compiles(base()))
      cuasync.cache.clear_memory()
      local disk = cuasync.cache.stats.disk
      assert.equal(0, compiles(base()))
      assert.equal(disk + 1, cuasync.cache.stats.disk)
      local ok, out = H.luajit([[
        local c = require("cuasync")
        c.program{ source = ']] .. SRC:gsub("\n", "\\n") .. [[', arch = "sm_90a", defines = { VALUE = 7 }, headers = { ["h.cuh"] = "// h\n" } }:ptx()
        print(c.cache.stats.nvrtc, c.cache.stats.disk)
      ]], { CUASYNC_CACHE_DIR = dir })
      assert.is_true(ok, out)
      assert.equal("0\t1\n", out)
    end)

    it("misses on any change of source, header, define, option, expression or arch", function()
      assert.equal(1, compiles(base()))
      assert.equal(1, compiles(base({ source = SRC .. "// changed\n" })))
      assert.equal(1, compiles(base({ headers = { ["h.cuh"] = "// h2\n" } })))
      assert.equal(1, compiles(base({ defines = { VALUE = 8 } })))
      assert.equal(1, compiles(base({ options = { "-lineinfo" } })))
      assert.equal(1, compiles(base({ expressions = { "k" } })))
      assert.equal(1, compiles(base({ arch = "sm_90" })))
      assert.equal(0, compiles(base()))
    end)

    local function entry_path()
      local p = io.popen("ls " .. dir .. "/*.entry")
      local f = p:read("*l")
      p:close()
      return f
    end

    for _, damage in ipairs({ "truncated", "flipped", "foreign" }) do
      it("recompiles and rewrites a " .. damage .. " entry instead of loading it", function()
        assert.equal(1, compiles(base()))
        local path = entry_path()
        local f = io.open(path, "rb"); local data = f:read("*a"); f:close()
        if damage == "truncated" then data = data:sub(1, #data - 100)
        elseif damage == "flipped" then
          local i = #data - 200
          data = data:sub(1, i - 1) .. string.char((data:byte(i) + 1) % 256) .. data:sub(i + 1)
        else data = "not a cache entry at all\n" end
        f = io.open(path, "wb"); f:write(data); f:close()
        cuasync.cache.clear_memory()
        local corrupt = cuasync.cache.stats.corrupt
        assert.equal(1, compiles(base()))
        assert.equal(corrupt + 1, cuasync.cache.stats.corrupt)
        cuasync.cache.clear_memory()
        assert.equal(0, compiles(base()))   -- rewritten whole
      end)
    end
  end)
end)
