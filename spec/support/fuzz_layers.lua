-- The fuzz of the layers added after the core (spec/support/fuzz.lua runs it): the pipeline
-- plan, the protocol model, the watchdog's options and the sweep. Three kinds of call:
--   random: random values into every public entry (classified by fuzz.lua: returned, clean,
--     raw, over-long, hang);
--   bad: a valid spec with one field made wrong by a value known to be wrong there: it must be
--     refused (a return is a silent acceptance);
--   result: a valid random spec whose result is checked: a plan simulates clean and its header
--     compiles, every sweep point ends as a row (with a reason where it is not measured), a role
--     that misuses t is a fault in the result, never a raise.
local ffi = require("ffi")
local cuasync = require("cuasync")

return function(R, value, record)
  local L = { bad = 0, silent = 0, wrong = 0, checked = 0, firsts = {} }
  local function first(kind, text) if not L.firsts[kind] then L.firsts[kind] = text end end
  local NaN, NULL = 0 / 0, ffi.cast("void *", 0)
  local function nop() end
  local function build() return { run = nop, bytes = 64 } end

  -- valid specs, made fresh each call (a field is replaced in a copy)
  local function plan_spec()
    return { name = "p" .. R(1, 9), stages = R(1, 8), stage_bytes = 16 * R(1, 256),
             producer = R(2) == 1 and "all" or { warps = R(1, 2) }, consumer = R(2) == 1 and { warps = R(1, 4) } or { threads = 32 * R(1, 8) } }
  end
  local function sweep_spec()
    return { name = "f" .. R(1, 3), host = true, rounds = 1, reps = 1, params = { a = { 1, 2 }, b = { "x" } }, build = build }
  end
  local function run_spec()
    return { barriers = { b = 1 }, roles = { x = function(t) t:arrive(t.bar.b) end } }
  end

  -- field -> values known to be wrong there
  local BAD = {
    pipeline = { plan_spec, function(s) return cuasync.pipeline(s) end, {
      name = { "", "int", "class", "a b", 5, "__x", "_X", NULL },
      stages = { 0, -1, 1.5, NaN, "2", 1e9, 1 / 0, NULL },
      stage_bytes = { 0, 15, -16, NaN, "1024", 2 ^ 40 },
      producer = { { warps = 0 }, { warps = 1.5 }, { threads = 0 }, "x", { warps = 1, threads = 32 }, { nope = 1 } },
      consumer = { { warps = 0 }, { warps = -1 }, 7, { x = 1 }, "all" },
      scratch = { -1, 0.5, NaN, "x", 2 ^ 40 },
      release = { "nope", 3 },
      completion = { "mbarrier", "group" },   -- cp.async words on a bulk plan
      cluster = { { 0, 1, 1 }, "x", { 1.5, 1, 1 } },
      loads = { {}, { 5 }, { { map = 5 } } },
      verfy = { true },
    } },
    simulate = { function() return {} end, function(o) return cuasync.pipeline(plan_spec()):simulate(o) end, {
      iterations = { 0, -1, NaN, "3", 1e9 }, runs = { 0, 1.5, NaN }, explore = { "dfs", 5 }, seed = { -1, NaN, 1.5 },
      bound = { 0, "x" }, nope = { 1 },
    } },
    mutate = { function() return { parity_flip = true } end, function(m) return cuasync.pipeline(plan_spec()):mutate(m) end, {
      parity_flip = { "yes", 1 }, tx_delta = { 0, NaN, 2 ^ 40 }, consumer_arrivals = { 0, NaN }, skip_commit = { 1 },
      wait_depth_delta = { 1 }, early_read = { true }, nope = { 1 },
    } },
    check = { function() return { smem_optin = 232448 } end, function(d) return cuasync.pipeline(plan_spec()):check(d) end, {
      smem_optin = { NaN, -1, "x", 1.5, 0 }, max_threads_per_block = { NaN, -1 }, reserved_smem_per_block = { NaN, -5 },
    } },
    sweep = { sweep_spec, function(s) return cuasync.sweep(s) end, {
      name = { "", "a/b", 5, "../x" }, params = { {}, { a = {} }, { a = { {} } }, { ["1x"] = { 1 } }, "x", { a = { NaN, 1 } } },
      order = { { "c" }, { "a", "a", "b" }, "a", { "a" } }, rounds = { 0, 1.5, NaN, -1 }, reps = { 0, -1, NaN },
      timeout_ms = { 0, NaN, "1" }, unit = { "GB", 5 }, strategy = { "nope", 5 }, budget = { { points = 0 }, { secs = 1 }, { points = NaN }, 5 },
      seed = { -1, 1.5, NaN }, flush_l2 = { "yes", 1 }, host = { "yes", 0 },
      baseline = { { name = "b" }, { name = "b", run = nop, bytes = NaN }, { name = "b", run = nop, bytes = "x" }, { name = "b", run = nop, flops = -1 } },
      where = { 5, "f" }, program = { 5 }, build = { 5, false }, verfy = { nop },
    } },
    ["sweep:run"] = { function() return { quiet = true } end, function(o) return cuasync.sweep(sweep_spec()):run(o) end, {
      jobs = { 0, 1.5, NaN, "x" }, strategy = { "x" }, budget = { { points = -1 } }, shard = { "3/2", "0/2", "x" },
      seed = { NaN }, nope = { 1 }, force = { "yes" },
    } },
    ["model.run"] = { run_spec, function(s) return cuasync.model.run(s) end, {
      barriers = { {}, { b = 0 }, { b = 2 ^ 21 }, { b = "1" }, { b = NaN } }, roles = { {}, { x = 5 }, "x" },
      explore = { "dfs" }, runs = { 0, NaN }, seed = { -1 }, bound = { 0 }, max_steps = { 0, NaN }, nope = { 1 },
    } },
    program_watchdog = { function() return { source = 'extern "C" __global__ void k() {}', watchdog = true } end,
      function(s) return cuasync.program(s) end, {
      watchdog = { 5, "yes", { timeout_ms = 0 }, { timeout_ms = NaN }, { action = "stop" }, { nope = 1 }, NULL },
    } },
  }
  local BAD_NAMES = {}
  for k in pairs(BAD) do BAD_NAMES[#BAD_NAMES + 1] = k end
  table.sort(BAD_NAMES)

  -- a role's misuse of t: must end as a fault in the result (r.ok false), never raise
  local MISUSE = {
    function(t) t:arrive(t.bar.b, "2") end, function(t) t:arrive(t.bar.b, 1, "x") end, function(t) t:arrive(cuasync.model.mbarrier(1)) end,
    function(t) t:wait_parity(t.bar.b, 2) end, function(t) t:wait_parity(t.bar.b, 0, {}) end, function(t) t:expect_tx(t.bar.b, -5) end,
    function(t) t:bulk(NaN, t.bar.b) end, function(t) t:arrive(t.bar.nope) end, function(t) t:wait_group(-1) end, function(t) t:cp_async(16, 5) end,
    function(t) t:arrive(t.bar.b, 2) end, function(t) coroutine.yield(5) end, function(t) error("mine") end,
  }

  local compiles, runs, bad_runs = 0, 0, 0
  local targets = {
    { "layers:bad", function()
        local name = BAD_NAMES[R(#BAD_NAMES)]
        local make, call, fields = BAD[name][1], BAD[name][2], BAD[name][3]
        local keys = {}
        for k in pairs(fields) do keys[#keys + 1] = k end
        table.sort(keys)
        local k = keys[R(#keys)]
        local v = fields[k][R(#fields[k])]
        local spec = make()
        spec[k] = v
        if name == "sweep:run" then bad_runs = bad_runs + 1 if bad_runs > 60 then return end end
        local ok, err = pcall(call, spec)
        if ok then
          L.silent = L.silent + 1
          first("silent " .. name, ("%s accepted %s = %s"):format(name, k, tostring(v)))
          return
        end
        L.bad = L.bad + 1
        error(err, 0)   -- fuzz.lua classifies the refusal: clean, raw or over-long
      end },
    { "layers:plan result", function()
        local ok, P = pcall(cuasync.pipeline, plan_spec())
        if not ok then return end   -- a random plan may not fit (the refusal is checked by :bad)
        L.checked = L.checked + 1
        local r = P:simulate{ runs = 2 }
        if not r.ok then L.wrong = L.wrong + 1 first("simulate", tostring(r)) end
        if not P:header():find("struct " .. P.name .. " {", 1, true) then L.wrong = L.wrong + 1 first("header", P:header()) end
        if compiles < 3 then
          compiles = compiles + 1
          local src = ('#include <cuasync/pipelines/%s.cuh>\nextern "C" __global__ void k(int *o) { *o = cuasync::pipelines::%s::stages; }\n'):format(P.name, P.name)
          local okc, e = pcall(function() return P:program{ source = src, arch = "sm_90a" }:compile():ptx() end)
          L.compiled = (L.compiled or 0) + (okc and 1 or 0)
          if not okc then L.wrong = L.wrong + 1 first("header compile", tostring(e)) end
        end
      end },
    { "layers:sweep result", function()
        runs = runs + 1
        if runs > 60 then return end
        local S = cuasync.sweep{ name = "fz", host = true, rounds = R(1, 2), reps = 1, params = { a = { 1, 2, 3 }, b = { "x", "y" } },
          where = function(p) if R(4) == 1 then return value() end return true end,
          build = function(p)
            local k = R(6)
            if k == 1 then error("planted") end
            if k == 2 then return value() end
            if k == 3 then return { run = function() if R(3) == 1 then error("in the rounds") end end, verify = function() return value() end } end
            return { run = nop, bytes = 16 * R(1, 4) }
          end }
        S:run{ quiet = true, force = true, jobs = 1 }
        L.checked = L.checked + 1
        local seen = {}
        for _, r in ipairs(S.rows) do
          seen[r.index] = true
          local why = r.kind ~= "measured" and (type(r.reason) ~= "string" or r.reason == "")
          if not ({ measured = true, pruned = true, failed = true, skipped = true, cancelled = true })[r.kind] or why then
            L.wrong = L.wrong + 1
            first("sweep row", ("row %s: kind %s reason %s"):format(tostring(r.index), tostring(r.kind), tostring(r.reason)))
          end
        end
        for i = 1, 6 do if not seen[i] then L.wrong = L.wrong + 1 first("sweep rows", "point " .. i .. " has no row") end end
      end },
    { "layers:role misuse", function()
        local spec = run_spec()
        spec.roles.y = MISUSE[R(#MISUSE)]
        spec.runs = 3
        local r = cuasync.model.run(spec)
        L.checked = L.checked + 1
        if r.ok then L.wrong = L.wrong + 1 first("role misuse", "a misusing role ran clean: " .. tostring(r)) end
      end },
    { "layers:random", function()
        local k = R(6)
        if k == 1 then return cuasync.sweep(R(3) == 1 and value() or record({ "name", "params", "order", "where", "program",
          "build", "baseline", "rounds", "reps", "timeout_ms", "unit", "host", "strategy", "budget", "seed", "flush_l2" })) end
        if k == 2 then return cuasync.sweep.best(value(), value()) end
        if k == 3 then return cuasync.sweep.merge(value()) end
        if k == 4 then
          local S = cuasync.sweep(sweep_spec())
          return S:write(value(), value(), value())
        end
        if k == 5 then return cuasync.program{ source = 'extern "C" __global__ void k() {}', watchdog = value() } end
        if k == 6 and R(2) == 1 then
          local S = cuasync.sweep(sweep_spec())
          return S:knee(R(3) == 1 and value() or record({ "x", "series", "memory" }))
        end
        return cuasync.is_hang(value())
      end },
  }
  return L, targets
end
