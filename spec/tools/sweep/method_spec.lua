-- Issue 43 on host sweeps (CI runs every line): the method's options and their bad values, the
-- rows' new fields (base_ms, spread, stable), auto rounds on synthetic jitter, the best line's
-- verdict, the table's columns, and the comparison of repeated runs (tools/sweep/repeat.lua).
local sweep = require("cuasync.tools.sweep")
local compare = require("cuasync.tools.sweep.repeat")
local json = require("cuasync.tools.json")
local isolate = require("cuasync.tools.isolate")
local H = require("helper")

local now = require("cuasync").now_ns
local function spin(ms) local t = now() while tonumber(now() - t) < ms * 1e6 do end end

local seq = 0
local function name(s) seq = seq + 1 return ("method_%s_%d_%d"):format(s, seq, os.time()) end

-- A host sweep whose variants spin for cost[p.k] ms, plus jitter (a fraction, uniform) each run.
local function jitter_sweep(cost, jitter, extra)
  local ks = {}
  for k in ipairs(cost) do ks[#ks + 1] = k end
  local spec = { name = name("j"), host = true, rounds = 3, reps = 2, params = { k = ks },
    build = function(p) return { run = function() spin(cost[p.k] * (1 + jitter * (H.random_u32() / 2 ^ 32 - 0.5))) end,
                                 verify = function() return true end } end,
    baseline = { name = "spin", run = function() spin(0.3 * (1 + jitter * (H.random_u32() / 2 ^ 32 - 0.5))) end } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return sweep(spec)
end

describe("sweep method: bad values", function()
  local base = { name = "bad", host = true, params = { k = { 1 } }, build = function() return { run = function() end } end }
  local function with(t) local s = {} for k, v in pairs(base) do s[k] = v end for k, v in pairs(t) do s[k] = v end return s end
  local cases = {
    { { rounds = 0 }, 'rounds must be an integer in 1..1000 or "auto" (got 0)' },
    { { rounds = "fast" }, 'rounds must be an integer in 1..1000 or "auto" (got "fast")' },
    { { rounds = 5, max_rounds = 3 }, "max_rounds (3) must be at least rounds (5): it caps the rounds auto adds" },
    { { warmup_ms = -1 }, "warmup_ms" },
    { { spread_limit = 0 }, "spread_limit must be a fraction in (0, 1), e.g. 0.02 for 2% (got 0)" },
    { { spread_limit = "2%" }, "spread_limit must be a fraction in (0, 1)" },
    { { rotate = 0 }, "rotate" },
    { { rotate = 65 }, "rotate" },
    { { rotate = 2 }, "rotate = 2 rotates a GPU's inputs out of its L2; a host = true sweep has none" },
  }
  for _, c in ipairs(cases) do
    it("refuses " .. c[2]:sub(1, 60), function()
      local ok, err = pcall(sweep, with(c[1]))
      assert.is_false(ok)
      assert.matches("cuasync.sweep: ", tostring(err), 1, true)
      assert.matches(c[2], tostring(err), 1, true)
    end)
  end

  it("refuses a bad rounds for one run, naming S:run", function()
    local S = sweep(with({ name = name("r") }))
    local ok, err = pcall(S.run, S, { rounds = "many" })
    assert.is_false(ok)
    assert.matches('cuasync.sweep.run: rounds must be an integer in 1..1000 or "auto" (got "many")', tostring(err), 1, true)
    assert.are.equal(5, S.rounds)   -- the sweep's own rounds are left as they were
  end)

  it("refuses a table column that is not one, before anything is printed", function()
    local S = sweep(with({ name = name("c") }))
    S:run{ quiet = true }
    local ok, err = pcall(S.text, S, { columns = { "sm_mhz", "clock" } })
    assert.is_false(ok)
    assert.matches('columns[2] is "clock", not a column (columns: ', tostring(err), 1, true)
  end)
end)

describe("sweep method: rows", function()
  it("keeps the baseline's figure beside each ratio, the spread and whether it is stable", function()
    local S = jitter_sweep({ 0.3, 0.5 }, 0.02)
    S:run{ quiet = true, force = true }
    for _, r in ipairs(S.rows) do
      assert.are.equal("measured", r.kind)
      assert.is_true(math.abs(r.base_ms / r.ms - r.ratio) < 1e-12)   -- ratio = base_ms / ms, checkable from the table
      assert.are.equal(#r.times, #r.base_times)
      assert.is_number(r.spread)
      assert.is_boolean(r.stable)
    end
    local text = S:text{ columns = { "spread", "stable" } }
    assert.matches("base ms", text, 1, true)
    assert.matches("spread", text, 1, true)
    assert.matches("\nbest: k=1 %(%d%.%d+ of spin%)[^\n]*: best by %d+%.%d%% over #2 %(separated%)", text)
  end)

  it("rounds = \"auto\" adds rounds to the leaders of a tie up to max_rounds and says so", function()
    -- #1 and #2 take turns being 10% faster, round by round (2 runs a round): a tie no number of
    -- rounds parts; #3 is 40% slower in every round
    local function turns(flip)
      local calls = 0
      return function()
        calls = calls + 1
        local even = math.floor(calls / 2) % 2 == 0
        spin(0.4 * ((even ~= flip) and 0.9 or 1.1))
      end
    end
    local S = sweep{ name = name("auto"), host = true, rounds = "auto", max_rounds = 9, reps = 2, params = { k = { 1, 2, 3 } },
      build = function(p)
        return { run = p.k == 3 and function() spin(0.56) end or turns(p.k == 2), verify = function() return true end }
      end,
      baseline = { name = "spin", run = function() spin(0.3) end } }
    S:run{ quiet = true, force = true }
    local by = {}
    for _, r in ipairs(S.rows) do by[r.params.k] = r end
    -- the tied pair went to the cap; a winner measured again alone has 5 rounds (a lone variant
    -- has nothing to be tied with); #3 was separated after the first 5
    for k = 1, 2 do assert.are.equal(by[k].remeasured and 5 or 9, #by[k].times) end
    assert.are.equal(5, #by[3].times)
    local text = S:text()
    assert.matches('rounds = "auto": the leaders were still tied after 9 rounds (max_rounds)', text, 1, true)
    assert.matches("\nbest: [^\n]*: [tb][ie][es][dt] ", text)   -- the verdict's words: spec/model/spread_spec.lua
  end)

  it("rounds = \"auto\" stops as soon as the best is separated", function()
    local S = jitter_sweep({ 0.3, 0.5 }, 0.02)
    S:run{ quiet = true, force = true, rounds = "auto" }
    for _, r in ipairs(S.rows) do assert.are.equal(5, #r.times) end
    assert.matches("best by %d+%.%d%% over #2 %(separated%)", S:text())
    assert.are.equal(3, S.rounds)   -- the run's rounds, not the sweep's
  end)
end)

describe("sweep method across processes", function()
  it("a Slurm shard runs S:run's rounds, and batch ids differ between processes", function()
    local dir = H.tmpdir()
    H.write(dir .. "/s.lua", [[
local cuasync = require("cuasync")
local n = cuasync.now_ns
local function spin(ms) local t = n() while tonumber(n() - t) < ms * 1e6 do end end
local S = cuasync.sweep{ name = "method_shards", host = true, rounds = 3, reps = 2, params = { k = { 1, 2, 3, 4 } },
  build = function(p) return { run = function() spin(0.2 + 0.05 * p.k) end, verify = function() return true end } end,
  baseline = { name = "spin", run = function() spin(0.2) end } }
S:run{ quiet = true, force = true, rounds = 7 }
]])
    local docs = {}
    for i = 1, 2 do
      -- the child finds its modules where this process did (dkjson included: on the GPU machine it
      -- comes from the carried Lua stack, not the system's path)
      local out, rc = H.sh(("LUA_PATH=%s LUA_CPATH=%s CUASYNC_CACHE_DIR=%s CUASYNC_SWEEP_SHARD=%d/2 " ..
        "CUASYNC_SWEEP_SHARD_JSON=%s/s%d.json luajit %s/s.lua"):format(isolate.shell_quote(package.path),
        isolate.shell_quote(package.cpath), dir, i, dir, i, dir))
      assert.are.equal(0, rc, out)
      docs[i] = json.decode_file(("%s/s%d.json"):format(dir, i))
    end
    local batches = {}
    for i, doc in ipairs(docs) do
      for _, r in ipairs(doc.rows) do
        if r.kind == "measured" then
          assert.are.equal(7, #r.times)          -- the run's rounds, not the sweep's 3
          assert.are.equal(7, #r.base_times)
          batches[r.batch] = batches[r.batch] or i
          assert.are.equal(i, batches[r.batch])  -- no batch id of one process in the other
        end
      end
    end
    assert.is_not_nil(next(batches))
  end)
end)

describe("sweep repeat: runs compared", function()
  local function doc(figs, stable)
    local rows = {}
    for k, f in ipairs(figs) do
      rows[k] = { index = k, params = { k = k }, kind = "measured", verified = true, ms = 1 / f, ratio = f,
                  times = { 1 / f, 1 / f, 1 / f, 1 / f, 1 / f }, base_times = { 1, 1, 1, 1, 1 }, batch = "b",
                  stable = stable ~= false }
    end
    return { name = "x", order = { "k" }, rows = rows }
  end

  it("says the winner held, and each variant's range", function()
    local c = compare.compare({ doc({ 1.00, 0.90 }), doc({ 1.01, 0.91 }), doc({ 0.99, 0.92 }) })
    assert.is_false(c.winner_changed)
    assert.are.equal("k=1", c.variants[1].key)
    assert.is_true(math.abs(c.variants[1].range - (1.01 / 0.99 - 1)) < 1e-12)
    local text = compare.text(c)
    assert.matches("the winner is the same in all 3 runs", text, 1, true)
    assert.matches("rows stable in every run: the largest range is 2.2% (k=2)", text, 1, true)
  end)

  it("lays out variant keys of any length (a GEMM's run past string.format's 99-column width)", function()
    local a, b = doc({ 1.00, 0.90 }), doc({ 1.01, 0.91 })
    local long = ("x"):rep(140)
    for _, d in ipairs({ a, b }) do d.order = { long }; for _, r in ipairs(d.rows) do r.params = { [long] = r.params.k } end end
    local text = compare.text(compare.compare({ a, b }))
    assert.matches("\nvariant" .. (" "):rep(#long + 2 - 7) .. "    run 1", text, 1, true)   -- the key is long .. "=1"
    assert.matches("\n" .. long .. "=2 ", text, 1, true)
  end)

  it("runs a host sweep script twice in separate processes and compares them (examples/repeat.lua)", function()
    local dir = H.tmpdir()
    H.write(dir .. "/s.lua", [[
local n = require("cuasync").now_ns
local function spin(ms) local t = n() while tonumber(n() - t) < ms * 1e6 do end end
return { name = "repeat_host", host = true, rounds = 3, reps = 2, params = { k = { 1, 2 } },
         build = function(p) return { run = function() spin(0.2 * p.k) end, verify = function() return true end } end,
         baseline = { name = "spin", run = function() spin(0.2) end } }
]])
    local out, rc = H.sh("CUASYNC_CACHE_DIR=" .. dir .. " luajit examples/repeat.lua --runs 2 --out " .. dir .. "/runs " .. dir .. "/s.lua")
    assert.are.equal(0, rc, out)
    assert.matches("run 1 of 2 %(%d+ s, exit 0%): best: k=1", out)
    assert.matches("run 2 best: k=1 (ratio ", out, 1, true)
    assert.matches("the winner is the same in all 2 runs", out, 1, true)
    assert.matches("\nk=2 +%d", out)
    local bad, code = H.sh("luajit examples/repeat.lua --runs 1 " .. dir .. "/s.lua")
    assert.are.equal(2, code, bad)
    assert.matches("--runs must be at least 2: one run has nothing to compare", bad, 1, true)
  end)

  it("notes a winner whose re-measure alone is far from its rounds (the speed changed under the sweep)", function()
    local builds = 0
    local S = sweep{ name = name("drift"), host = true, rounds = 2, reps = 2, params = { k = { 1, 2 } },
      build = function(p)   -- the first builds (the rounds) spin 8 and 16 ms, the winner's rebuild (its re-measure) 1 ms
        builds = builds + 1
        local ms = builds <= 2 and 8 * p.k or 1
        return { run = function() spin(ms) end, verify = function() return true end } end }
    S:run{ quiet = true, force = true }
    local notes = table.concat(S.result.notes or {}, "\n")
    assert.matches("#1 ran %d+%.%d+ ms re%-measured alone and %d+%.%d+ ms in the sweep's rounds %(%d+%.%d+x%): the speed changed during the sweep", notes)
    local T = jitter_sweep({ 2, 4 }, 0)   -- the same speed throughout: no such note
    T:run{ quiet = true, force = true }
    assert.falsy(table.concat(T.result.notes or {}, "\n"):find("speed changed", 1, true))
  end)

  it("flags a winner that changed although a run said it was separated", function()
    local c = compare.compare({ doc({ 1.00, 0.90 }), doc({ 0.90, 1.00 }) })
    assert.is_true(c.winner_changed)
    assert.is_false(c.all_tied)
    assert.matches("THE WINNER CHANGED although a run said its best was separated", compare.text(c), 1, true)
    assert.has_error(function() compare.compare({}) end, "cuasync.sweep.repeat: no runs to compare")
  end)
end)
