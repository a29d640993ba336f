-- The command's usage errors: exit 2, always, naming the option (an error in the run is 1); and
-- no NUL byte in what a compile says (NVRTC counts its terminating NUL in a text's size).
local cuasync = require("cuasync")
local H = require("helper")

local sh = H.sh

describe("cuasync command", function()
  it("exits 2 on every usage error of sweep, naming the option", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write('return { name = "cmd", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    f:close()
    local base = "luajit bin/cuasync sweep " .. dir .. "/s.lua --quiet "
    for _, case in ipairs({
      { "--shard 3/2", "--shard 3/2 is not I/N with 1 <= I <= N" },
      { "--shard 0/2", "--shard 0/2 is not I/N with 1 <= I <= N" },
      { "--shard x", "--shard x is not I/N with 1 <= I <= N" },
      { "--jobs 0", "--jobs 0 is not an integer >= 1" },
      { "--jobs x", "--jobs x is not an integer >= 1" },
      { "--param 'k=,'", "--param k=, has an empty value" },
      { "--param k=1,,2", "--param k=1,,2 has an empty value" },
      { "--gpus -1", "--gpus -1 is not all or a comma list of device ordinals" },
      { "--gpus 0,x", "--gpus 0,x is not all or a comma list of device ordinals" },
    }) do
      local out, rc = sh(base .. case[1])
      assert.equal(2, rc, case[1] .. ": " .. out)
      assert.truthy(out:find(case[2], 1, true), case[1] .. ": " .. out)
    end
    local out, rc = sh(base .. "--param k=3,4 --shard 2/2")
    assert.equal(0, rc, out)
    assert.truthy(out:find("1 points: 1 measured", 1, true), out)
  end)

  it("says nothing with a NUL byte: a clean compile's log, a failed compile's message, cuasync compile's output", function()
    local m = cuasync.program{ source = 'extern "C" __global__ void k() {}', arch = "sm_90a" }:compile()
    assert.equal("", m:log())
    assert.is_nil(m:ptx():find("%z"))
    local ok, err = pcall(function() cuasync.program{ source = 'extern "C" __global__ void k() { int x = ; }', arch = "sm_90a" }:compile() end)
    assert.is_false(ok)
    assert.is_nil(tostring(err):find("%z"))
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/bad.cu", "w"))
    f:write('extern "C" __global__ void k() {\n  int x = ;\n}\n')
    f:close()
    local out, rc = sh("luajit bin/cuasync compile " .. dir .. "/bad.cu --arch sm_90a")
    assert.equal(1, rc, out)
    assert.is_nil(out:find("%z"), out)
    out, rc = sh("luajit bin/cuasync compile copy_bulk.cu --arch sm_90a -D STAGES=3 --ptx " .. dir .. "/k.ptx")
    assert.equal(0, rc, out)
    assert.is_nil(assert(io.open(dir .. "/k.ptx")):read("*a"):find("%z"))
  end)
end)
