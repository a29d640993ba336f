-- The sweep's result store under disk faults and concurrency (tools/sweep/store.lua): a store
-- that is truncated, foreign or of a future version is set aside, never overwritten unread; a
-- store that is a directory, an unwritable cache, a cache "directory" that is a file: said
-- once, and the sweep measures on; entries that are not what the sweep wrote are measured again;
-- concurrent sweeps of one name keep every row; a killed compile worker loses no point.
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

local SMALL = [[
  local sweep = require("cuasync.tools.sweep")
  builds = 0
  function make(ns) return sweep{ name = "kept", host = true, rounds = 1, reps = 1, params = { n = ns or { 1, 2, 3 } },
    build = function(p) builds = builds + 1 return { run = function() end, bytes = p.n } end } end
]]

local function fresh(code, env)
  env = env or {}
  env.CUASYNC_CACHE_DIR = env.CUASYNC_CACHE_DIR or H.tmpdir()
  env.CUASYNC_CUDA_LIB = NOLIB
  local ok, out = H.luajit(code, env, 120)
  assert.is_true(ok, out)
  return out, env.CUASYNC_CACHE_DIR
end



describe("sweep store faults", function()
  it("sets aside a store that is truncated, foreign JSON or of a future version, measures, and keeps the new rows", function()
    for _, case in ipairs({ { '{"version":3,"entries":{', "was not JSON of a sweep's store %(not JSON" },
                            { '{"name":"pkg","version":"1.0.0","dependencies":{}}', "was not JSON of a sweep's store" },
                            { '[1, 2, 3]', "was a JSON list, not a store" },
                            { '{"version":9,"entries":{},"runs":{}}', "was not a version 3 store %(version 9%)" } }) do
      local dir = H.tmpdir()
      assert.is_true(os.execute("mkdir -p " .. dir .. "/sweeps") == 0)
      local path = dir .. "/sweeps/kept.json"
      H.write(path, case[1])
      local out = fresh(SMALL .. [[
        local S = make():run{ quiet = true }
        print("BUILDS", builds)
        print(S:text())
        S = make():run{ quiet = true }
        print("AGAIN", builds)
      ]], { CUASYNC_CACHE_DIR = dir })
      local builds = out:match("BUILDS\t(%d+)")
      assert.truthy(tonumber(builds) >= 3, out)   -- and one more per winner re-measured alone
      assert.truthy(out:find("note: the result store " .. path .. " was ", 1, true), out)
      local _, notes = out:gsub("note: ", "")
      assert.equal(1, notes, out)
      assert.truthy(out:find(case[2]), out)
      assert.truthy(out:find("moved to " .. path .. ".unreadable.1, and a new store started", 1, true), out)
      assert.equal(case[1], H.read(path .. ".unreadable.1"))     -- nothing lost
      assert.truthy(out:find("AGAIN\t" .. builds, 1, true), out)   -- the new store answers the second run
    end
  end)

  it("says once that results are not kept when the store is a directory, the cache unwritable or a file, and measures", function()
    local dir = H.tmpdir()
    assert.is_true(os.execute("mkdir -p " .. dir .. "/sweeps/kept.json") == 0)
    local file = H.tmpdir() .. "/plain"
    H.write(file, "x")
    local ro = H.tmpdir()
    local cases = { { dir, "the result store " .. dir .. "/sweeps/kept.json is not a file: results are not kept" },
                    { file, "the result store was not written: " },
                    { ro .. "/cache", "the result store was not written: " } }
    -- root ignores directory permissions: an unwritable cache needs a read-only place instead
    if H.sh("id -u"):match("^0") then cases[3] = { "/proc/cuasync_cache", "the result store was not written: " } else
      assert.is_true(os.execute("chmod 500 " .. ro) == 0) end
    for _, c in ipairs(cases) do
      local out = fresh(SMALL .. [[
        local S = make():run{ quiet = true }
        local n = 0
        for _, r in ipairs(S.rows) do if r.kind == "measured" then n = n + 1 end end
        print("MEASURED", n, #S.notes)
        print(S:text())
      ]], { CUASYNC_CACHE_DIR = c[1] })
      assert.truthy(out:find("MEASURED\t3\t1", 1, true), out)      -- one note, all rows measured
      assert.truthy(out:find("note: " .. c[2], 1, true), out)
      assert.falsy(out:find("mkdir", 1, true), out)
      local _, n = out:gsub("result store", "")
      assert.equal(1, n, out)
    end
    assert.is_nil(H.sh("ls " .. dir .. "/sweeps"):find("%.tmp"))
  end)

  it("measures again entries that are not what the sweep wrote, and keeps each row's identity", function()
    local _, dir = fresh(SMALL .. "make():run{ quiet = true }")
    local path = dir .. "/sweeps/kept.json"
    local code = SMALL .. [=[
      local store = require("cuasync.tools.sweep.store")
      local json = require("cuasync.tools.json")
      local doc = require("dkjson").decode(io.open(os.getenv("CUASYNC_CACHE_DIR") .. "/sweeps/kept.json"):read("*a"))
      local keys = {}
      for k in pairs(doc.entries) do keys[#keys + 1] = k end
      table.sort(keys)
      -- a number; a sealed entry of an unknown kind; a sealed entry that claims another row's identity
      doc.entries[keys[1]] = 42
      local e = doc.entries[keys[2]]
      e.kind, e.sum = "bogus", nil
      doc.entries[keys[2]] = store.seal(e)
      local e3 = doc.entries[keys[3]]
      e3.index, e3.sum = 99, nil
      doc.entries[keys[3]] = store.seal(e3)
      io.open(os.getenv("CUASYNC_CACHE_DIR") .. "/sweeps/kept.json", "w"):write(json.encode(doc))
      local S = make():run{ quiet = true }
      local ids = {}
      for _, r in ipairs(S.rows) do ids[#ids + 1] = r.index .. "=" .. r.params.n .. (r.cached and "c" or "") end
      print("ROWS", builds, S.result.store.damaged, table.concat(ids, " "))
    ]=]
    local out = fresh(code, { CUASYNC_CACHE_DIR = dir })
    -- two entries measured again (at least two builds: a re-measured winner builds once more),
    -- the sealed one with a foreign index answers its own row, under the row's identity
    local builds, damaged, ids = out:match("ROWS\t(%d+)\t(%d+)\t([^\n]*)")
    assert.truthy(tonumber(builds) >= 2 and damaged == "2", out)
    assert.equal("1=1 2=2 3=3c", ids, out)
    assert.truthy(H.read(path):find('"version":3', 1, true))
  end)

  it("keeps every row of concurrent sweeps of one name (8 processes, 8 disjoint parameter sets)", function()
    local dir = H.tmpdir()
    local script = H.tmpdir() .. "/c.lua"
    H.write(script, [[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "build/?.so;" .. package.cpath
      local sweep = require("cuasync.tools.sweep")
      local k = tonumber(arg[1])
      local ns = {}
      for i = 1, 25 do ns[i] = k * 100 + i end
      for round = 1, 3 do
        sweep{ name = "many", host = true, rounds = 1, reps = 1, params = { n = ns },
          build = function(p) return { run = function() end, bytes = p.n } end }:run{ quiet = true, force = true }
      end
    ]])
    local cmd = {}
    for k = 1, 8 do
      cmd[#cmd + 1] = ("CUASYNC_CUDA_LIB=%s CUASYNC_CACHE_DIR=%s luajit %s %d &"):format(NOLIB, dir, script, k)
    end
    local out, rc = H.sh(table.concat(cmd, " ") .. " wait")
    assert.equal(0, rc, out)
    local doc = require("dkjson").decode(H.read(dir .. "/sweeps/many.json"))
    local n = 0
    for _ in pairs(doc.entries) do n = n + 1 end
    assert.equal(200, n)
    assert.is_nil(H.sh("ls " .. dir .. "/sweeps"):find("%.tmp"))
  end)

  it("loses no point when a compile worker is killed mid-sweep: the main process compiles its points, a note says so", function()
    local dir = H.tmpdir()
    local script = dir .. "/k.lua"
    H.write(script, [[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "build/?.so;" .. package.cpath
      local cuasync = require("cuasync")
      local S = cuasync.sweep{ name = "killed", host = true, rounds = 1, reps = 1, params = { stages = { 1, 2, 3, 4 }, chunk = { 1024, 2048 } },
        program = function(p)
          -- the worker that gets stages = 3 dies there, as if killed
          if os.getenv("CUASYNC_SWEEP_WORKER") and p.stages == 3 then os.exit(137) end
          return cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { STAGES = p.stages, CHUNK = p.chunk } }
        end,
        build = function(p) return { run = function() end, bytes = p.chunk } end }
      S:run{ jobs = 2, quiet = true, force = true }
      local kinds = {}
      for _, r in ipairs(S.rows) do kinds[r.kind] = (kinds[r.kind] or 0) + 1 end
      print("ROWS", #S.rows, kinds.measured, table.concat(S.notes or {}, " | "))
    ]])
    local out = H.sh(("CUASYNC_CUDA_LIB=%s CUASYNC_CACHE_DIR=%s luajit %s"):format(NOLIB, dir, script))
    assert.truthy(out:find("ROWS\t8\t8\t", 1, true), out)
    assert.truthy(out:find("compile worker %d ended %(exit 137%) during a batch; the main process compiled its points"), out)
  end)
end)
