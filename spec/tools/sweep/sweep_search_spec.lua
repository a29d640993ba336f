-- The sweep engine's parts on the CPU: the space, each strategy, budgets, row kinds (slow
-- included), the result store's integrity, T4 output, the knee, and bad input. Host sweeps
-- (host = true) and replays of a stored landscape, so CI runs every line of it.
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there
local sweep = require("cuasync.tools.sweep")
local space = require("cuasync.tools.sweep.space")
local store = require("cuasync.tools.sweep.store")
local t4 = require("cuasync.tools.report.t4")
local json = require("cuasync.tools.json")

-- Run `code` in a fresh process with its own result store; returns its output.
local function fresh(code, env)
  env = env or {}
  env.CUASYNC_CACHE_DIR = env.CUASYNC_CACHE_DIR or H.tmpdir()
  env.CUASYNC_CUDA_LIB = NOLIB   -- host sweeps: no GPU, here or on the H200
  local ok, out = H.luajit(code, env, 120)
  assert.is_true(ok, out)
  return out, env.CUASYNC_CACHE_DIR
end

-- A 2,000-point landscape with a known optimum: a main hill, a deceptive second hill in a far
-- corner and a hash ripple; 2 points lie within 2% of the optimum.
local LANDSCAPE = [[
  local sweep = require("cuasync.tools.sweep")
  local store = require("cuasync.tools.sweep.store")
  local P = { a = {1,2,3,4,5}, b = {1,2,3,4}, c = {1,2,3,4,5}, d = {1,2,3,4}, e = {1,2,3,4,5} }
  local ORDER = { "a", "b", "c", "d", "e" }
  local function height(i, p)
    local x = 100 - 3*(p.a-4)^2 - 4*(p.b-2)^2 - 2*(p.c-5)^2 - 3*(p.d-3)^2 - 2.5*(p.e-2)^2 - 1.5*(p.a-p.c+1)^2
    local y = 96 - 6*(p.a-1)^2 - 6*(p.b-4)^2 - 5*(p.c-1)^2 - 6*(p.d-1)^2 - 5*(p.e-5)^2
    return math.max(x, y, 10) + ((i * 2654435761) % 1000) / 1000 * 3
  end
  local function make(extra)
    local spec = { name = "landscape", host = true, params = P, order = ORDER,
                   build = function() error("a replay never builds") end }
    for k, v in pairs(extra or {}) do spec[k] = v end
    return sweep(spec)
  end
  -- store the whole landscape as if a host sweep had measured it
  local S = make()
  local st = { entries = {}, runs = {} }
  local keys, top = {}, 0
  for i, p in ipairs(S:points()) do
    local f = height(i, p)
    top = math.max(top, f)
    local key = store.key("host", "-", require("cuasync.tools.report").params_text(ORDER, p))
    st.entries[key] = store.seal({ kind = "measured", ms = 1 / f, gbps = f, verified = true, params = p })
    keys[#keys + 1] = key
  end
  st.runs.host = { at = os.time(), keys = keys }
  store.save("landscape", st)
]]

describe("sweep space", function()
  it("numbers points in order, the last parameter fastest, and finds their neighbours", function()
    local s = space.new("sweep", { x = { 1, 2, 3 }, y = { "a", "b" } }, { "x", "y" })
    assert.equal(6, s:count())
    assert.same({ x = 1, y = "a" }, s:point(1))
    assert.same({ x = 1, y = "b" }, s:point(2))
    assert.same({ x = 3, y = "b" }, s:point(6))
    for i = 1, 6 do assert.equal(i, s:index(s:digits(i))) end
    -- x=2 y=a (point 3): x one down (1), x one up (5), y one up (4)
    local n = s:neighbours(3)
    table.sort(n)
    assert.same({ 1, 4, 5 }, n)
    assert.error_matches(function() s:set("sweep", "z", { 1 }) end, 'unknown param "z" %(params: x, y%)')
    assert.error_matches(function() space.new("sweep", { x = {} }) end, "params.x is empty")
  end)
end)

describe("sweep strategies", function()
  it("local search finds the 2,000-point optimum within 100 points in at least 8 of 10 seeds; random in fewer", function()
    local out = fresh(LANDSCAPE .. [[
      local hits = { ["local"] = 0, random = 0 }
      for _, strategy in ipairs({ "local", "random" }) do
        for seed = 1, 10 do
          local R = make():run{ strategy = strategy, budget = { points = 100 }, seed = seed, replay = true, quiet = true }
          assert(R.complete == false and R.result.evaluated == 100, "a budget of 100 points stops at 100")
          if R.best.gbps >= 0.98 * top then hits[strategy] = hits[strategy] + 1 end
        end
      end
      print("HITS", hits["local"], hits.random)
      -- the same seed makes the same choices
      local A = make():run{ strategy = "random", budget = { points = 30 }, seed = 7, replay = true, quiet = true }
      local B = make():run{ strategy = "random", budget = { points = 30 }, seed = 7, replay = true, quiet = true }
      local C = make():run{ strategy = "random", budget = { points = 30 }, seed = 8, replay = true, quiet = true }
      local function picked(R) local t = {} for _, r in ipairs(R.rows) do if r.kind == "measured" then t[#t + 1] = r.index end end return table.concat(t, ",") end
      print("SEEDS", picked(A) == picked(B), picked(A) ~= picked(C))
      -- every point is a row; those not chosen say why
      local n, why = 0, nil
      for _, r in ipairs(A.rows) do if r.kind == "skipped" then n = n + 1; why = r.reason end end
      print("SKIPPED", #A.rows, n, why)
      print(A:text():match("INCOMPLETE[^\n]*"))
      -- replay exhaustively: every stored point answered, complete
      local E = make():run{ strategy = "replay", quiet = true }
      print("REPLAY", E.complete, #E.rows, E.rows[1].cached, E.best.gbps >= top)
    ]])
    local loc, rnd = out:match("HITS\t(%d+)\t(%d+)")
    assert.truthy(loc, out)
    assert.is_true(tonumber(loc) >= 8, "local: " .. loc .. " of 10")
    assert.is_true(tonumber(rnd) < tonumber(loc), "random " .. rnd .. " vs local " .. loc)
    assert.truthy(out:find("SEEDS\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("SKIPPED\t2000\t1970\tnot sampled (strategy random, budget 30 points)", 1, true), out)
    assert.truthy(out:find("INCOMPLETE: budget of 30 points reached: 1970 of 2000 candidate points not sampled", 1, true), out)
    assert.truthy(out:find("REPLAY\ttrue\t2000\ttrue\ttrue", 1, true), out)
  end)

  it("local says it cannot search where nothing gets a figure: a run with no GPU (compile only), and one whose every point fails", function()
    local out = fresh([[
      local sweep = require("cuasync.tools.sweep")
      -- a GPU sweep on a machine with no driver: every point compiles (none here) and is skipped
      local S = sweep{ name = "offline_local", params = { a = { 1, 2, 3 }, b = { 1, 2 } },
                       build = function() return { run = function() end } end }
      S:run{ strategy = "local", quiet = true, force = true }
      print("OFFLINE", S.result.evaluated, S.complete, S.rows[1].kind, #S.notes)
      print(S.notes[1])
      print(S:text():match("note: strategy local[^\n]*"))
      -- a host sweep whose every point fails verification: measured, but no figure
      local F = sweep{ name = "failing_local", host = true, rounds = 1, reps = 1, params = { a = { 1, 2, 3 }, b = { 1, 2 } },
                       build = function() return { run = function() end, verify = function() return false, "planted" end } end }
      F:run{ strategy = "local", quiet = true, force = true }
      print("FAILING", F.result.evaluated, F.complete)
      print(F.notes[#F.notes])
      -- with figures it searches and says nothing of the kind
      local G = sweep{ name = "good_local", host = true, rounds = 1, reps = 1, params = { a = { 1, 2, 3 } },
                       build = function() return { run = function() end, bytes = 8 } end }
      G:run{ strategy = "local", quiet = true, force = true }
      print("GOOD", #(G.notes or {}))
    ]])
    assert.truthy(out:find("OFFLINE	6	true	skipped	1", 1, true), out)
    -- (the driver named is the spec's missing one: CUASYNC_CUDA_LIB)
    local offline = "strategy local cannot search: nothing is measured in this run %(no CUDA driver: [^\n]*libcuda.so.1 not found[^\n]*%), so no point has a figure to climb from; it took the candidates in an order drawn from the seed instead, as strategy random does"
    assert.truthy(out:find("\n" .. offline .. "\n"), out)
    assert.truthy(out:find("\nnote: " .. offline .. "\n"), out)
    assert.truthy(out:find("FAILING\t6\ttrue\nstrategy local could not search: none of the 6 points it evaluated got a figure (each failed, or was not measured), so it took them one at a time in an order drawn from the seed\n", 1, true), out)
    assert.truthy(out:find("GOOD\t0", 1, true), out)
  end)

  it("exhaustive keeps today's order; a seconds budget stops between batches; defaults come from the sweep's table", function()
    local out = fresh([[
      local sweep = require("cuasync.tools.sweep")
      local order = {}
      local function make(extra)
        local spec = { name = "budgeted", host = true, rounds = 1, reps = 1, params = { i = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 } },
          build = function(p) order[#order + 1] = p.i return { run = function() local t = os.clock() while os.clock() - t < 0.02 do end end } end }
        for k, v in pairs(extra or {}) do spec[k] = v end
        return sweep(spec)
      end
      local S = make():run{ quiet = true, force = true, budget = { points = 5 } }
      print("POINTS", S.complete, table.concat(order, ",", 1, 5), S.rows[6].kind, S.rows[6].reason)
      order = {}
      S = make({ budget = { seconds = 0.1 } }):run{ quiet = true, force = true }
      local measured = 0
      for _, r in ipairs(S.rows) do if r.kind == "measured" then measured = measured + 1 end end
      print("SECONDS", S.complete, measured < 20, measured >= 8, S.result.stopped)
      S = make({ strategy = "random", seed = 3 }):run{ quiet = true, force = true, budget = { points = 4 } }
      print("DEFAULTS", S.result.strategy, S.result.seed, S.result.evaluated)
    ]])
    assert.truthy(out:find("POINTS\tfalse\t1,2,3,4,5\tskipped\tnot sampled (strategy exhaustive, budget 5 points)", 1, true), out)
    assert.truthy(out:find("SECONDS\tfalse\ttrue\ttrue\tbudget of 0.1 s reached", 1, true), out)
    assert.truthy(out:find("DEFAULTS\trandom\t3\t4", 1, true), out)
  end)
end)

describe("sweep measurement", function()
  it("stops a variant over 2x the best early (slow, with its partial figure) and re-measures the winner alone", function()
    local out = fresh([[
      local sweep = require("cuasync.tools.sweep")
      local builds = {}
      local S = sweep{ name = "slowpoke", host = true, rounds = 4, reps = 2, params = { spin = { 1, 8 } },
        build = function(p)
          builds[p.spin] = (builds[p.spin] or 0) + 1
          local runs = 0
          return { run = function() runs = runs + 1 local t = os.clock() while os.clock() - t < 0.002 * p.spin do end end,
                   bytes = 1000, verify = function() return true end }
        end }
      S:run{ quiet = true, force = true }
      local fast, slow = S.rows[1], S.rows[2]
      print("SLOW", slow.kind, slow.slow, #slow.times, #fast.times, fast.slow)
      print("REMEASURED", fast.remeasured ~= nil, builds[1], builds[8], S.best == fast)
      print(S:text():match("1 of the measured stopped early[^\n]*"))
    ]])
    assert.truthy(out:find("SLOW\tmeasured\ttrue\t1\t4\tnil", 1, true), out)
    assert.truthy(out:find("REMEASURED\ttrue\t2\t1\ttrue", 1, true), out)
    assert.truthy(out:find("1 of the measured stopped early as slow (over 2x the best time per unit of work after 1 round", 1, true), out)
  end)
end)

describe("sweep result store", function()
  local SMALL = [[
    local sweep = require("cuasync.tools.sweep")
    builds = 0
    function make() return sweep{ name = "kept", host = true, rounds = 1, reps = 1, params = { n = { 1, 2, 3 } },
      build = function(p) builds = builds + 1 return { run = function() end, bytes = p.n } end } end
  ]]

  it("re-measures a damaged entry instead of trusting it, and says so", function()
    local _, dir = fresh(SMALL .. "make():run{ quiet = true }")
    local path = dir .. "/sweeps/kept.json"
    local f = assert(io.open(path))
    local text = f:read("*a")
    f:close()
    -- one entry's figure changed by hand: its checksum no longer matches
    local doc = require("dkjson").decode(text)
    local key = next(doc.entries)
    doc.entries[key].ms = 1e-9
    f = assert(io.open(path, "w"))
    f:write(json.encode(doc))
    f:close()
    local out = fresh(SMALL .. [[
      local S = make():run{ quiet = true }
      local cached = 0
      for _, r in ipairs(S.rows) do if r.cached then cached = cached + 1 end end
      print("AGAIN", builds, cached, S.result.store.damaged)
      print(S:text():match("1 stored entry[^\n]*"))
    ]], { CUASYNC_CACHE_DIR = dir })
    assert.truthy(out:find("AGAIN\t1\t2\t1", 1, true), out)
    assert.truthy(out:find("1 stored entry of " .. path .. " failed their integrity check: not trusted and measured again", 1, true), out)
  end)
end)

describe("sweep reports", function()
  it("writes T4 (Kernel Tuner's results schema) with every evaluated row and its invalidity", function()
    local dir = H.tmpdir()
    local S = sweep{ name = "t4", host = true, rounds = 2, reps = 2, params = { k = { "ok", "wrong", "bad", "cut" } },
      where = function(p) return p.k ~= "cut", "cut by where" end,
      build = function(p)
        if p.k == "bad" then error("no such variant") end
        return { run = function() end, bytes = 64, verify = function() return p.k == "ok", "planted" end }
      end }
    S:run{ quiet = true, force = true }
    assert.equal(dir .. "/r.t4.json", S:write("t4", dir .. "/r.t4.json"))
    local doc = json.decode_file(dir .. "/r.t4.json")
    assert.equal("1.0.0", doc.schema_version)
    assert.equal(4, #doc.results)
    local inv = {}
    for _, res in ipairs(doc.results) do
      for _, f in ipairs(t4.REQUIRED) do assert.is_not_nil(res[f], "a result lacks " .. f) end
      assert.is_true(type(res.configuration) == "table" and type(res.times) == "table" and type(res.correctness) == "number")
      inv[res.configuration.k] = res.invalidity .. ":" .. res.correctness
    end
    assert.same({ ok = "correct:1", wrong = "correctness:0", bad = "runtime:0", cut = "constraints:0" }, inv)
    local ok_res = doc.results[1]
    assert.equal("time", ok_res.measurements[1].name)
    assert.equal(2, #ok_res.times.runtimes)
    assert.equal("compile", t4.invalidity({ kind = "failed", reason = "compile: x" }))
    assert.equal("timeout", t4.invalidity({ kind = "failed", reason = "hang: cuasync.watchdog: kernel 'k' hung" }))
    assert.is_nil(t4.invalidity({ kind = "skipped", reason = "not sampled" }))
  end)

  it("names the missing directory of an output path and an unknown format; rows stay", function()
    local S = sweep{ name = "outs", host = true, rounds = 1, reps = 1, params = { n = { 1 } },
      build = function() return { run = function() end } end }
    S:run{ quiet = true, force = true }
    assert.has_error(function() S:write("t4", H.missing("dir/r.json")) end,
      "cuasync.sweep.t4: cannot write " .. H.missing("dir/r.json") .. ": the directory " .. H.missing("dir") .. " does not exist")
    assert.error_matches(function() S:write("xml", "r.xml") end, "no report format \"xml\" %(formats: csv, json, plot, t4, text%)")
    assert.equal(1, #S.rows)
  end)
end)

describe("sweep knee", function()
  -- fixed rows: series a saturates at stages 3 (bytes in flight 24 KiB there; one 8 KiB stage
  -- per SM), series b keeps gaining to the last point (its build gave no stage_inflight)
  local function fixed()
    local S = setmetatable({ order = { "s", "stages" }, params = { s = { "a", "b" }, stages = { 1, 2, 3, 4, 5 } }, rows = {} }, sweep.Sweep)
    local figs = { a = { 1.0, 1.6, 2.0, 2.02, 2.03 }, b = { 1, 2, 3, 4, 5 } }
    for _, s in ipairs({ "a", "b" }) do
      for i, f in ipairs(figs[s]) do
        S.rows[#S.rows + 1] = { kind = "measured", verified = true, params = { s = s, stages = i }, gbps = f, inflight = i * 8192,
                                stage_inflight = s == "a" and 8192 or nil }
      end
    end
    return S
  end

  it("names where the next step gains under 2%, with the bytes in flight, beside Little's law", function()
    local K = fixed():knee{ x = "stages", series = "s",
      memory = { latency_ns = 800, dtod_gbps = 2 * 2640, sms = 132, bytes_per_sm = 2640 * 800 / 132 } }
    assert.equal(3, K.series[1].knee)
    assert.equal(3 * 8192, K.series[1].inflight)
    assert.is_true(K.series[1].reached)
    assert.equal(5, K.series[2].knee)
    assert.is_false(K.series[2].reached)
    -- 2640 GB/s x 800 ns / 132 SMs = 16000 bytes, plus the 8192 of the stage still landing:
    -- 3 stages (24576) cover 24192; without stage_inflight (series b) 2 stages (16384) cover 16000
    assert.equal(3, K.series[1].predicted)
    assert.equal(0, K.series[1].off)
    assert.equal(2, K.series[2].predicted)
    -- rows without stage_inflight: Little's law alone, and the line does not claim the stage term
    local bare = fixed()
    for _, r in ipairs(bare.rows) do r.stage_inflight = nil end
    local little = bare:knee{ x = "stages", series = "s", memory = { latency_ns = 800, dtod_gbps = 2 * 2640, sms = 132, bytes_per_sm = 16000 } }
    assert.equal(2, little.series[1].predicted)
    assert.falsy(little:text():find("plus", 1, true), little:text())
    local text = K:text()
    assert.truthy(text:find("s=a: measured stages=3, 24.0 KiB in flight per SM; predicted stages=3 (24.0 KiB of 23.6 KiB needed), 0 steps off", 1, true), text)
    assert.truthy(text:find("s=b: measured stages=5 (still gaining at the last step)", 1, true), text)
    assert.truthy(text:find("knee predicted within one step in 1 of 2 series", 1, true), text)
    assert.truthy(text:find("= 15.6 KiB in flight per SM, plus one stage of every resident block", 1, true), text)
    -- a consumer that holds a landed stage one stage-time (a bulk store drains it): 16000 + 2 x
    -- 8192 = 32384 needs 4 stages (32768)
    local held = fixed():knee{ x = "stages", series = "s", hold = 1, memory = { latency_ns = 800, dtod_gbps = 2 * 2640, sms = 132, bytes_per_sm = 16000 } }
    assert.equal(4, held.series[1].predicted)
    assert.equal(32384, held.series[1].points[4].need)
    assert.truthy(held:text():find("plus 2 stages (one landing, 1 held) of every resident block", 1, true), held:text())
    assert.error_matches(function() fixed():knee{ x = "depth" } end, 'x = "depth" is not a parameter of the sweep')
    assert.error_matches(function() fixed():knee{ x = "stages", series = "stages" } end, "series names \"stages\", which is not a parameter other than x")
    assert.error_matches(function() fixed():knee{ x = "stages", memory = {} } end, "memory must be a cuasync.probe.memory%(%) result")
    assert.error_matches(function() fixed():knee{ x = "stages", hold = -1 } end, "hold must be a finite number of stages >= 0 %(got %-1%)")
    assert.error_matches(function() fixed():knee{ x = "stages", hold = "1" } end, 'hold must be a finite number of stages >= 0 %(got "1"%)')
  end)
end)

describe("sweep bad input", function()
  it("names an unknown strategy, a budget of 0 or below, a seed that is not an integer", function()
    local b = function() return { run = function() end } end
    local S = sweep{ name = "bad", host = true, params = { n = { 1 } }, build = b }
    assert.has_error(function() S:run{ strategy = "annealing" } end,
      'cuasync.sweep.run: strategy must be one of exhaustive, random, local, replay (got "annealing")')
    assert.has_error(function() S:run{ budget = { points = 0 } } end, "cuasync.sweep.run: budget.points must be a positive integer (got 0)")
    assert.has_error(function() S:run{ budget = { seconds = -1 } } end, "cuasync.sweep.run: budget.seconds must be a positive number (got -1)")
    assert.has_error(function() S:run{ budget = {} } end, "cuasync.sweep.run: budget must give points, seconds or both")
    assert.has_error(function() S:run{ seed = 1.5 } end, "cuasync.sweep.run: seed must be an integer in 0..2147483648 (got 1.5)")
    assert.has_error(function() sweep{ name = "bad", params = { n = { 1 } }, build = b, strategy = "x" } end,
      'cuasync.sweep: strategy must be one of exhaustive, random, local, replay (got "x")')
    assert.has_error(function() require("cuasync").probe.memory(5) end, "cuasync.probe.memory: dev must be a cuasync.device() (got 5)")
    assert.has_error(function() sweep{ name = "bad", host = true, flush_l2 = true, params = { n = { 1 } }, build = b } end,
      "cuasync.sweep: flush_l2 = true flushes a GPU's L2 between reps; a host = true sweep has none")
  end)

  it("the command line: --strategy, --budget-points, --seed; --out makes its directory; a bad --seed or budget exits 2", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write([[return { name = "cli_search", host = true, rounds = 1, reps = 1, params = { a = { 1, 2, 3, 4 }, b = { 1, 2, 3 } },
      build = function(p) return { run = function() end, bytes = p.a * p.b } end }]])
    f:close()
    local sh = H.sh
    local env = "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " CUASYNC_CUDA_LIB=" .. NOLIB .. " "
    local out, rc = sh(env .. ("luajit bin/cuasync sweep %s/s.lua --strategy local --budget-points 5 --seed 2 --quiet --out %s/new/deep"):format(dir, dir))
    assert.equal(0, rc, out)
    assert.truthy(out:find("strategy local, seed 2: 5 points evaluated", 1, true), out)
    assert.truthy(out:find("INCOMPLETE: budget of 5 points reached", 1, true), out)
    assert.truthy(out:find("wrote T4 " .. dir .. "/new/deep/cli_search.t4.json", 1, true), out)
    out, rc = sh(env .. ("luajit bin/cuasync sweep %s/s.lua --seed x"):format(dir))
    assert.equal(2, rc, out)
    assert.truthy(out:find("--seed x is not an integer", 1, true), out)
    out, rc = sh(env .. ("luajit bin/cuasync sweep %s/s.lua --budget-points -3 --quiet"):format(dir))
    assert.equal(2, rc, out)
    assert.truthy(out:find("--budget-points -3 must be a positive integer", 1, true), out)
    out, rc = sh(env .. ("luajit bin/cuasync sweep %s/s.lua --quiet --t4 %s/none/r.json --csv %s/r.csv"):format(dir, dir, dir))
    assert.equal(1, rc, out)
    assert.truthy(out:find("12 points: 12 measured", 1, true) and out:find("wrote CSV", 1, true), out)
    assert.truthy(out:find("the directory " .. dir .. "/none does not exist", 1, true), out)
  end)
end)
