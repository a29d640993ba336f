-- Measuring one batch of points, the work every runner shares (runners/): admit (where and
-- program prune before any compile), compile one, then build, poison, one run under the
-- timeout, verify, and every verified variant timed beside the baseline in interleaved rounds.
-- Each point ends as a row of one kind (row.lua); a failure names its step (r.failed_in). A
-- plan's refusal prunes and anything else fails: told by the error's kind (errors.lua), never
-- by its text.
local streams = require("cuasync.stream")
local cache = require("cuasync.cache")
local compiler = require("cuasync.compiler")
local program = require("cuasync.program")
local util = require("cuasync.util")
local bench = require("cuasync.tools.bench")
local nvtx = require("cuasync.tools.nvtx")
local errors = require("cuasync.errors")
local row = require("cuasync.tools.sweep.row")
local stop = require("cuasync.tools.sweep.stop")

local timing = require("cuasync.tools.sweep.timing")

local M = { note = timing.note }

-- An error's message without the position error() put in front of it (the row says where).
M.message = errors.message

-- A refusal from a pipeline plan prunes; anything else is a failure.
function M.prunes(e) return errors.kind(e) == "plan" end

-- The row of an error raised at a step: pruned for a plan's refusal, else failed there.
local function refused(r, e, step)
  if M.prunes(e) then return row.set(r, "pruned", M.message(e)) end
  return row.set(r, "failed", step .. ": " .. M.message(e), step)
end

-- program(p) for a point, or nil and the error (or why): a cuasync.program, which the sweep
-- keys, compiles and asks for its arch and resources (a table that only looks like one would
-- fail there, raw, for the whole run).
function M.program_of(S, p, label)
  local ok, prog = stop.pcall(label or "program()", S.program, p)
  if not ok then return nil, prog end
  if getmetatable(prog) ~= program.Program then
    return nil, ("program(p) must return a cuasync.program (got %s)"):format(util.describe(prog))
  end
  return prog
end

-- A sweep compiles many variants in one process: NVRTC's automatic precompiled header pays
-- there (compiler.lua), unless the program said pch = false. arch: given by the main process
-- to a compile worker (else the program's own, which may ask the device).
function M.compile_one(prog, arch)
  local before = cache.stats.nvrtc
  local t0 = streams.now_ns()
  local pch = prog.pch
  if pch == nil then prog.pch = true end
  local ok, entry = pcall(prog.build, prog, arch)
  prog.pch = pch
  if not ok then error(entry, 0) end
  return (streams.now_ns() - t0) / 1e6, cache.stats.nvrtc > before and "miss" or "hit", entry
end

-- A compiled row's resources from ptxas' report (no GPU needed): r.registers (the most of any
-- of its kernels) and r.spills (spill stores + loads, bytes, all kernels). With S.spills =
-- "prune" a variant that spills is pruned, before it is built or timed.
function M.resources(S, r, entry)
  local res = entry and compiler.resources(entry, r.prog:arch())
  if not res or next(res) == nil then return end
  local regs, spills = 0, 0
  for _, k in pairs(res) do regs, spills = math.max(regs, k.registers), spills + k.spill_stores + k.spill_loads end
  r.registers, r.spills = regs, spills
  if S.spills == "prune" and spills > 0 then
    row.set(r, "pruned", ("spills %d bytes to local memory (spills = \"prune\")"):format(spills))
  end
end

-- where(p), then program(p): the row pruned or failed, or kept with r.prog. Returns keep.
function M.admit(S, r)
  local p = r.params
  if S.where then
    local ok, res, why = stop.pcall(stop.label(S, r, "where()"), S.where, p)
    if not ok then
      refused(r, res, "where")
      return false
    elseif res == false or res == nil then
      row.set(r, "pruned", why and M.message(why) or "where(p) returned false")
      return false
    end
  end
  if S.program then
    local prog, err = M.program_of(S, p, stop.label(S, r, "program()"))
    if not prog then
      refused(r, err, "program")
      return false
    end
    r.prog = prog
  end
  return true
end

-- The fields a build table may carry: what the sweep reads, and what the library's own builds
-- (kernels/*.build) return beside it for the caller (kernel, plan, config, grid, per_sm). Any
-- other is a misspelling the sweep would otherwise ignore (verfy: a variant never verified).
local BUILD_FIELDS = { run = true, verify = true, poison = true, bytes = true, flops = true, inflight = true,
                       stage_inflight = true, dtype = true,
                       kernel = true, plan = true, config = true, grid = true, per_sm = true, workspace = true }

-- The build result's shape, or why it is wrong.
function M.check_build(v)
  if type(v) ~= "table" then return ("build(p) must return a table { run = fn, verify = fn, bytes = n } (got %s)"):format(util.describe(v)) end
  if type(v.run) ~= "function" then return "build(p) returned no run function" end
  for k in pairs(v) do
    if not BUILD_FIELDS[k] then
      return ("build(p) returned an unknown field %s (fields: %s)"):format(util.describe(k), util.sorted_keys(BUILD_FIELDS))
    end
  end
  if v.dtype ~= nil and type(v.dtype) ~= "string" then return ("build(p).dtype must be a string such as \"bf16\" (got %s)"):format(util.describe(v.dtype)) end
  for _, f in ipairs({ "verify", "poison" }) do
    if v[f] ~= nil and type(v[f]) ~= "function" then return ("build(p).%s must be a function (got %s)"):format(f, util.describe(v[f])) end
  end
  for _, f in ipairs({ "bytes", "flops", "inflight", "stage_inflight" }) do
    local n = v[f]
    if n ~= nil and (type(n) ~= "number" or n ~= n or n < 0 or n == math.huge) then
      return ("build(p).%s must be a finite non-negative number (got %s)"):format(f, util.describe(n))
    end
  end
end

-- What a verify() result means: only true passes; false (with a reason), a string (the reason)
-- or anything else fails. Returns nil when it passed, else the reason.
function M.verdict(ok, res, why)
  if not ok then return M.message(res) end
  if res == true then return nil end
  if type(res) == "string" then return res end
  if res == false then return why ~= nil and tostring(why) or "verify returned false" end
  return ("verify returned %s: only true passes (return true, or false and the reason)"):format(util.describe(res))
end

-- A run that takes runs[1], runs[2], ... in turn, call after call (rotate = n).
local function in_turn(runs)
  local i, n = 0, #runs
  return function() i = i % n + 1 return runs[i]() end
end

-- One checked run of a build v (poison, run, the sweep's wait): true, or false with the row set
-- (cancelled, hang, timeout, run) and, when the GPU cannot be trusted for later points, why they
-- are not run. what: "" or "rotate: copy 2 of 3: ", said before the reason.
local function run_once(S, r, v, label, what)
  -- poison and run are the variant's own code; the wait after them is the sweep's (it polls)
  local ok, err = stop.pcall(stop.label(S, r, "run()"), function()
    if v.poison then v.poison() end
    nvtx.push(label)
    v.run()
    nvtx.pop()
  end)
  if ok and not S.host then ok, err = pcall(streams.synchronize, { timeout_ms = S.timeout_ms }) end
  if ok then return true end
  if errors.kind(err) == "cancelled" then   -- over timeout_ms, or Ctrl-C: the GPU is free again
    row.set(r, "cancelled", what .. M.message(err))
    r.elapsed_ms = err.elapsed_ms
    return false
  end
  if errors.kind(err) == "hang" then
    row.set(r, "failed", what .. "hang: " .. tostring(err), "hang")
    return false
  end
  local timeout = errors.kind(err) == "timeout"
  row.set(r, "failed", what .. "run: " .. tostring(err), timeout and "timeout" or "run")
  if timeout then
    return false, ("the GPU is still busy with the hung variant #%d (no watchdog, so it could not be cancelled): not run"):format(r.index)
  elseif errors.kind(err) == "driver" and err.sticky then
    return false, ("the CUDA context was lost at variant #%d: not run"):format(r.index)
  end
  return false
end

-- rotate = n: build(p) called n - 1 more times, each copy run once and verified like the first;
-- the timed run then takes the copies in turn, so that a rep reads inputs the n - 1 reps before
-- it did not touch (L2-cold once n x the inputs exceed the L2). build must make its own inputs.
local function rotation(S, r, first)
  local runs = { first.run }
  for k = 2, S.rotate do
    local what = ("rotate: copy %d of %d"):format(k, S.rotate)
    local ok, v = stop.pcall(stop.label(S, r, "build()"), S.build, r.params)
    local bad = not ok and M.message(v) or M.check_build(v)
    if bad then
      row.set(r, "failed", what .. ": " .. bad, "build")
      return nil
    end
    local ran, blocked = run_once(S, r, v, S:label(r.params), what .. ": ")
    if not ran then return nil, blocked end
    local wrong = v.verify and M.verdict(stop.pcall(stop.label(S, r, "verify()"), v.verify))
    if wrong then
      row.set(r, "failed", "verification: " .. what .. ": " .. wrong, "verification")
      return nil
    end
    runs[k] = v.run
  end
  return setmetatable({ run = in_turn(runs) }, { __index = first })
end

-- The baseline's run under rotate = n: baseline.build() called n times (each a run function on
-- its own inputs), taken in turn; without baseline.build the baseline reads warm inputs (said).
local function rotate_baseline(S)
  local b = S.baseline
  if not b or S.rotate <= 1 or S.baseline_run then return end
  if not b.build then
    M.note(S, ("rotate = %d rotates the variants' inputs, not the baseline's (give baseline.build to rotate it)"):format(S.rotate))
    S.baseline_run = b.run
    return
  end
  local runs = {}
  for k = 1, S.rotate do
    local ok, f = stop.pcall("baseline.build()", b.build)
    local why = not ok and M.message(f) or type(f) ~= "function" and ("returned %s, not a run function"):format(util.describe(f))
    if why then   -- the rows are still timed, beside the baseline on warm inputs, and the note says so
      M.note(S, ("baseline.build() call %d of rotate = %d: %s: the baseline reads warm inputs"):format(k, S.rotate, why))
      S.baseline_run = b.run
      return
    end
    runs[k] = f
  end
  S.baseline_run = in_turn(runs)
end

-- Build one point and run it once, verified. Returns the build, or nil (the row says why) and,
-- when the GPU cannot be trusted for later points, the reason they are not run.
local function try(S, r)
  local ok, v, why_not = stop.pcall(stop.label(S, r, "build()"), S.build, r.params)
  if ok and v == nil and why_not ~= nil then
    row.set(r, "pruned", M.message(why_not))   -- build(p) -> nil, "why": it cannot run here
    return nil
  end
  local bad = ok and M.check_build(v)
  if not ok then
    refused(r, v, "build")
    return nil
  elseif bad then
    row.set(r, "failed", bad, "build")
    return nil
  end
  local label = S:label(r.params)
  local ran, blocked = run_once(S, r, v, label, "")
  if not ran then return nil, blocked end
  if v.verify then
    local wrong = M.verdict(stop.pcall(stop.label(S, r, "verify()"), v.verify))
    if wrong then
      row.set(r, "failed", "verification: " .. wrong, "verification")
      return nil
    end
    r.verified = true
  end
  if (S.rotate or 1) > 1 then
    local blocked
    v, blocked = rotation(S, r, v)
    if not v then return nil, blocked end
  end
  if v.inflight then r.inflight = v.inflight end
  if v.stage_inflight then r.stage_inflight = v.stage_inflight end
  if nvtx.enabled() then
    local run, push, pop = v.run, nvtx.push, nvtx.pop
    v = setmetatable({ run = function() push(label); run(); pop() end }, { __index = v })
  end
  return v
end

M.try = try   -- the traced rebuild (runners/init.lua) goes through the same steps

-- Measure `rows` (already compiled) on the current device; `step` is called once per row.
function M.measure(S, rows, step, gpu, best_cost)
  local variants, blocked = {}, nil
  rotate_baseline(S)
  for _, r in ipairs(rows) do
    if not blocked and stop.requested() then blocked = stop.NOT_RUN end
    if blocked then
      row.set(r, "skipped", blocked)
    else
      local v
      v, blocked = try(S, r)
      if v then variants[#variants + 1] = { run = v.run, row = r, bytes = v.bytes, flops = v.flops, dtype = v.dtype } end
    end
    step()
  end
  return timing.time(S, variants, gpu, best_cost)
end

-- The winner measured again alone (a fresh build, then rounds beside the baseline only): a
-- figure that owed something to its neighbours in the rounds does not stand. Keeps the sweep's
-- figure in r.remeasured. Returns true and the new baseline row (if any), or false and why.
function M.remeasure(S, r, gpu)
  rotate_baseline(S)   -- in a multi-GPU run the main process has not measured before
  local copy = row.new(r.index, r.params)
  local v, why = try(S, copy)
  if not v then return false, why or copy.reason end
  local first, in_sweep = r.ms, row.pick(r, "timed")
  local base = timing.time(S, { { run = v.run, row = copy, bytes = v.bytes, flops = v.flops, dtype = v.dtype } }, gpu, nil)
  if copy.kind ~= "measured" then return false, copy.reason end
  row.copy(r, copy, "timed")
  r.remeasured, r.in_sweep = first, r.in_sweep or in_sweep   -- the best line judges it by the sweep's rounds
  return true, base
end

return M
