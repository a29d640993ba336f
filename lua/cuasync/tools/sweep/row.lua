-- A sweep's row: the one schema. Every point of a sweep ends as one row of a kind below, and
-- every part that moves rows (the store, the workers, the re-measure, merge, every report)
-- takes its field list from here, by tag, so a new field is added once; a row read back (a
-- merged file, a store entry) is held to the same fields' value rules (M.check), and a point's
-- identity is one exact text (M.key_text), apart from the short one people read (M.params_text).
--   measured   timed (ms; gbps / tflops from the build's bytes / flops; ratio to the baseline)
--   pruned     refused before it ran (where, a plan's rule, spills = "prune", build -> nil, why)
--   failed     raised or hung or verified wrong (`failed_in` says at which step)
--   cancelled  over timeout_ms, or Ctrl-C, on a watched kernel: the GPU is free again
--   skipped    not run: no GPU, not sampled, not in the store, the sweep stopped
local util = require("cuasync.util")

local M = {}

M.KINDS = { "measured", "pruned", "failed", "skipped", "cancelled" }
M.IS_KIND = {}
for _, k in ipairs(M.KINDS) do M.IS_KIND[k] = true end

-- The steps a row can fail at (r.failed_in), in the order a point goes through them.
M.STEPS = { "where", "program", "compile", "build", "run", "hang", "timeout", "verification", "timing", "remeasure", "worker" }

-- { name, tags, meaning, value }. Tags: figure (what a row is ranked by), timed (what the timed
-- rounds set: a re-measure replaces these), measure (what a measurement sets: a GPU worker sends
-- these back), store (kept in the result store between runs), column (CSV and --columns), run
-- (what merge keeps of each file's measurement of a key). value: the rule its value keeps
-- (RULES below; M.check holds a row read from a file, or the store, to them).
M.FIELDS = {
  { "index", "", "the point's position in the cross product, from 1", "index" },
  { "params", "store", "the parameter values", "params" },
  { "kind", "measure store column run", "measured | pruned | failed | skipped | cancelled", "kind" },
  { "verified", "measure store column", "true when build(p).verify passed", "boolean" },
  { "ms", "figure timed measure store column run", "median time of one run, ms", "positive" },
  { "gbps", "figure timed measure store column run", "bytes / time", "non-negative" },
  { "tflops", "figure timed measure store column run", "flops / time", "non-negative" },
  { "ratio", "figure timed measure store column run", "the baseline's time / this time, same rounds", "positive" },
  { "times", "timed measure store", "each round's median, ms", "times" },
  { "base_ms", "timed measure store column", "the baseline's median in the same rounds, ms (ratio = base_ms / ms)", "positive" },
  { "base_times", "timed measure store", "the baseline's figure in each of the same rounds, ms", "times" },
  { "spread", "timed measure store column", "relative interquartile range of the per-round figures (ratios, else times)", "non-negative" },
  { "stable", "timed measure store column", "spread within the sweep's spread_limit (default 2%)", "boolean" },
  { "round_ids", "timed measure store", "the id of each of its rounds in its batch (times[i] was round round_ids[i])", "ids" },
  { "batch", "timed measure", "which timed rounds it was in, unique across processes (one batch compares round by round)", "string" },
  { "work", "timed measure store", "bytes or flops of one run (the unit of its cost)", "non-negative" },
  { "sm_mhz", "timed measure store column", "NVML: the SM clock after its benches, median over its rounds, MHz", "non-negative" },
  { "mem_mhz", "timed measure store column", "NVML: the memory clock, median, MHz", "non-negative" },
  { "power_w", "timed measure store column", "NVML: the board's power draw, mean over its rounds, W", "non-negative" },
  { "temp_c", "timed measure store column", "NVML: the GPU's temperature, the most over its rounds, C", "non-negative" },
  { "reasons", "timed measure store column", "NVML: the clock-event (throttle) reasons seen, joined by +, empty: none", "string" },
  { "ceiling", "timed measure store column", "the fraction of the peak at its SM clock (FLOP rows) or of the memory's spec (byte rows)", "non-negative" },
  { "ceiling_of", "timed measure store column", "what ceiling is a fraction of: \"peak at N MHz\" or \"memory spec\"", "string" },
  { "of_copy", "timed measure store column", "byte rows: the fraction of the measured cuMemcpyDtoD bandwidth (cuasync.probe.memory)", "non-negative" },
  { "gpu", "timed measure store column", "the GPU ordinal that measured it", "count" },
  { "compile_ms", "store column", "its compile, ms", "non-negative" },
  { "cache", "store column", "the compile cache: hit | miss", "cache" },
  { "cached", "column", "answered from the result store, not measured now", "boolean" },
  { "reason", "measure column run", "why it is not measured (or a note)", "string" },
  { "slow", "timed measure store column", "stopped early, over SLOW_FACTOR x the best: partial figures", "boolean" },
  { "remeasured", "store column", "the sweep's figure (ms) before the winner was measured alone", "positive" },
  { "in_sweep", "store", "a re-measured row's timed fields in the sweep's rounds (the best line's verdict reads them)", "runs" },
  { "inflight", "measure store column", "bytes in flight per block (the knee)", "non-negative" },
  { "stage_inflight", "measure store column", "bytes of one stage per block (the knee)", "non-negative" },
  { "registers", "store column", "the most registers of its kernels (ptxas)", "count" },
  { "spills", "store column", "spill stores + loads, bytes, all kernels (ptxas)", "count" },
  { "failed_in", "measure column", "the step a failed row failed at (M.STEPS)", "step" },
  { "stall_full", "store column", "traced: the share of consumer time waiting on full (S:run{ trace })", "non-negative" },
  { "stall_empty", "store column", "traced: the share of producer time waiting on empty", "non-negative" },
  { "diagnosis", "store column", "traced: the timeline's one-line diagnosis", "string" },
  { "cost", "measure", "ms per unit of work (the early-exit bar; dropped after the run)", "positive" },
  { "elapsed_ms", "measure", "how long a cancelled row ran", "non-negative" },
  { "key", "", "device | driver | program digest | params (M.key_text): its identity in the store and merge", "string" },
  { "note", "", "what merge says of a key measured more than once", "string" },
  { "runs", "", "merge: each file's measurement of a key, where they differ", "runs" },
}

local by_tag = {}
for _, f in ipairs(M.FIELDS) do
  for tag in f[2]:gmatch("%S+") do
    by_tag[tag] = by_tag[tag] or {}
    table.insert(by_tag[tag], f[1])
  end
end

-- The names of a tag's fields, in schema order (a fresh list).
function M.fields(tag)
  local t = {}
  for i, n in ipairs(by_tag[tag] or error("cuasync.sweep.row: no tag " .. tostring(tag), 2)) do t[i] = n end
  return t
end

-- The first name of cols that is not a column of the schema: its index and the name; nil when all
-- are (the text report's columns option and the command's --columns read it).
function M.unknown_column(cols)
  for i, c in ipairs(cols) do
    local found = false
    for _, k in ipairs(by_tag.column) do found = found or k == c end
    if not found then return i, c end
  end
end

-- A new table with r's fields of a tag.
function M.pick(r, tag)
  local t = {}
  for _, k in ipairs(by_tag[tag]) do t[k] = r[k] end
  return t
end

-- dst's fields of a tag set from src (absent ones cleared): a measurement moved onto its row.
function M.copy(dst, src, tag)
  for _, k in ipairs(by_tag[tag]) do dst[k] = src[k] end
  return dst
end

function M.new(index, params) return { index = index, params = params, kind = "measured" } end

-- The row ends as kind, for a reason; a failure names its step.
function M.set(r, kind, reason, step)
  r.kind, r.reason, r.failed_in = kind, reason, kind == "failed" and step or nil
  return r
end

-- A value as the reports and the params text print it: integers exactly, else %.6g.
function M.fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
    return ("%.6g"):format(v)
  end
  return tostring(v)
end

-- "stages=4 rows=32": a point in text, for people (the reports, labels, messages). Two values
-- may print alike (0.1000001 and 0.1000002, 1 and "1"): never an identity (M.key_text is).
function M.params_text(order, p)
  local t = {}
  for _, k in ipairs(order) do t[#t + 1] = k .. "=" .. M.fmt_value(p[k]) end
  return table.concat(t, " ")
end

-- A value exactly, its type in the text: numbers to the last bit (%.17g), strings quoted.
local function exact(v)
  if type(v) == "number" then return ("%.17g"):format(v) end
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

-- 'alpha=0.10000010000000001 k="1"': a point's identity, the one text the store's keys, replay
-- and merge use. Two points have one key text only when every value is the same value.
function M.key_text(order, p)
  local t = {}
  for _, k in ipairs(order) do t[#t + 1] = k .. "=" .. exact(p[k]) end
  return table.concat(t, " ")
end

-- The figure a row is ranked by: its ratio to the baseline, else GB/s, else TFLOP/s, else 1/ms.
function M.figure(r)
  return r.ratio or r.gbps or r.tflops or (r.ms and 1 / r.ms)
end

-- A row that counts: measured, not failed verification, with a figure.
function M.ok(r)
  return r.kind == "measured" and r.verified ~= false and M.figure(r) ~= nil
end

-- The best measured, verified row (slow rows included: they can only lose).
function M.best(rows)
  local best
  for _, r in ipairs(rows) do
    if M.ok(r) and (not best or M.figure(r) > M.figure(best)) then best = r end
  end
  return best
end

-- -- Checking a row read back (a JSON file, a store entry) ---------------------------------------

-- A value for a message: a table read from JSON by its entries (a decoded list carries a metatable).
local function describe(v)
  if type(v) ~= "table" then return util.describe(v) end
  local copy = {}
  for k, x in pairs(v) do copy[k] = x end
  return util.describe(copy)
end

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end
local function scalar(v) return type(v) == "string" or type(v) == "boolean" or finite(v) end
local IS_STEP = {}
for _, s in ipairs(M.STEPS) do IS_STEP[s] = true end

-- value rule -> function(v, name) -> nil | "NAME is V: the rule" (a suffix of the row's name).
local function rule(ok, text)
  return function(v, name)
    if not ok(v) then return (".%s is %s: %s"):format(name, describe(v), (text:gsub("NAME", name))) end
  end
end
local RULES = {
  boolean = rule(function(v) return type(v) == "boolean" end, "NAME must be true or false"),
  positive = rule(function(v) return finite(v) and v > 0 end, "NAME must be a finite number > 0"),
  ["non-negative"] = rule(function(v) return finite(v) and v >= 0 end, "NAME must be a finite number >= 0"),
  count = rule(function(v) return util.is_integer(v) and v >= 0 end, "NAME must be an integer >= 0"),
  string = rule(function(v) return type(v) == "string" end, "NAME must be a string"),
  cache = rule(function(v) return v == "hit" or v == "miss" end, 'NAME must be "hit" or "miss"'),
  step = rule(function(v) return IS_STEP[v] end, "NAME must be one of " .. table.concat(M.STEPS, ", ")),
  runs = rule(function(v) return type(v) == "table" end, "NAME must be a list of runs"),
  ids = function(v, name)
    if type(v) ~= "table" then return (".%s is %s: %s must be a list of round ids"):format(name, describe(v), name) end
    for i, t in ipairs(v) do
      if not (util.is_integer(t) and t >= 1) then return (".%s[%d] is %s: a round id is an integer >= 1"):format(name, i, describe(t)) end
    end
  end,
  times = function(v, name)
    local text = ("%s must be a list of finite numbers > 0"):format(name)
    if type(v) ~= "table" or #v == 0 then return (".%s is %s: %s"):format(name, describe(v), text) end
    for i, t in ipairs(v) do
      if not (finite(t) and t > 0) then return (".%s[%d] is %s: %s"):format(name, i, describe(t), text) end
    end
  end,
}

-- Why the row r, read back from a file, is not one the sweep makes (nil when it is), as a
-- suffix of the caller's name for it (".ms is \"fast\": a measured row's ms must be ..."): every
-- field of the schema it carries keeps its value rule, a measured row has its time, and its
-- params name the order's parameters, each a finite number, a string or a boolean. entry: a
-- store entry (measured, no index); otherwise the row needs its index. Fields it does not
-- know are left alone (a newer cuasync's).
function M.check(r, order, entry)
  if type(r) ~= "table" or type(r.params) ~= "table" or (not entry and not (util.is_integer(r.index) and r.index >= 1)) then
    return entry and " has no params" or " has no index or params"
  end
  if not M.IS_KIND[r.kind] then
    return (".kind is %s, not measured, pruned, failed, skipped or cancelled"):format(describe(r.kind))
  end
  if entry and r.kind ~= "measured" then return (" is %s, not a measured row"):format(r.kind) end
  for _, k in ipairs(order or {}) do
    if r.params[k] == nil then return (".params has no %s, a parameter of its order"):format(k) end
  end
  for k, v in pairs(r.params) do
    if type(k) ~= "string" or not scalar(v) then
      return (".params.%s is %s: a parameter value must be a number, string or boolean"):format(tostring(k), describe(v))
    end
  end
  if r.kind == "measured" and r.ms == nil then return " is measured but has no ms" end
  if r.kind == "measured" and r.ms ~= nil and not (finite(r.ms) and r.ms > 0) then
    return (".ms is %s: a measured row's ms must be a finite number > 0"):format(describe(r.ms))
  end
  for _, f in ipairs(M.FIELDS) do
    local v, check = r[f[1]], RULES[f[4]]
    if v ~= nil and check then
      local why = check(v, f[1])
      if why then return why end
    end
  end
end

return M
