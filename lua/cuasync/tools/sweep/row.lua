-- A sweep's row: the one schema. Every point of a sweep ends as one row of a kind below, and
-- every part that moves rows (the store, the workers, the re-measure, merge, every report)
-- takes its field list from here, by tag, so a new field is added once.
--   measured   timed (ms; gbps / tflops from the build's bytes / flops; ratio to the baseline)
--   pruned     refused before it ran (where, a plan's rule, spills = "prune", build -> nil, why)
--   failed     raised or hung or verified wrong (`failed_in` says at which step)
--   cancelled  over timeout_ms, or Ctrl-C, on a watched kernel: the GPU is free again
--   skipped    not run: no GPU, not sampled, not in the store, the sweep stopped
local M = {}

M.KINDS = { "measured", "pruned", "failed", "skipped", "cancelled" }
M.IS_KIND = {}
for _, k in ipairs(M.KINDS) do M.IS_KIND[k] = true end

-- The steps a row can fail at (r.failed_in), in the order a point goes through them.
M.STEPS = { "where", "program", "compile", "build", "run", "hang", "timeout", "verification", "timing", "remeasure", "worker" }

-- { name, tags, meaning }. Tags: figure (what a row is ranked by), timed (what the timed rounds
-- set: a re-measure replaces these), measure (what a measurement
-- sets: a GPU worker sends these back), store (kept in the result store between runs),
-- column (CSV and --columns), run (what merge keeps of each file's measurement of a key).
M.FIELDS = {
  { "index", "", "the point's position in the cross product, from 1" },
  { "params", "store", "the parameter values" },
  { "kind", "measure store column run", "measured | pruned | failed | skipped | cancelled" },
  { "verified", "measure store column", "true when build(p).verify passed" },
  { "ms", "figure timed measure store column run", "median time of one run, ms" },
  { "gbps", "figure timed measure store column run", "bytes / time" },
  { "tflops", "figure timed measure store column run", "flops / time" },
  { "ratio", "figure timed measure store column run", "the baseline's time / this time, same rounds" },
  { "times", "timed measure store", "each round's median, ms" },
  { "gpu", "measure store column", "the GPU ordinal that measured it" },
  { "compile_ms", "store column", "its compile, ms" },
  { "cache", "store column", "the compile cache: hit | miss" },
  { "cached", "column", "answered from the result store, not measured now" },
  { "reason", "measure column run", "why it is not measured (or a note)" },
  { "slow", "timed measure store column", "stopped early, over SLOW_FACTOR x the best: partial figures" },
  { "remeasured", "store column", "the sweep's figure (ms) before the winner was measured alone" },
  { "inflight", "measure store column", "bytes in flight per block (the knee)" },
  { "stage_inflight", "measure store column", "bytes of one stage per block (the knee)" },
  { "registers", "store column", "the most registers of its kernels (ptxas)" },
  { "spills", "store column", "spill stores + loads, bytes, all kernels (ptxas)" },
  { "failed_in", "measure column", "the step a failed row failed at (M.STEPS)" },
  { "stall_full", "store column", "traced: the share of consumer time waiting on full (S:run{ trace })" },
  { "stall_empty", "store column", "traced: the share of producer time waiting on empty" },
  { "diagnosis", "store column", "traced: the timeline's one-line diagnosis" },
  { "cost", "measure", "ms per unit of work (the early-exit bar; dropped after the run)" },
  { "elapsed_ms", "measure", "how long a cancelled row ran" },
  { "key", "", "device | driver | program digest | params: its identity in the store and merge" },
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

-- "stages=4 rows=32": a point's identity in text (the store's keys and merge use it).
function M.params_text(order, p)
  local t = {}
  for _, k in ipairs(order) do t[#t + 1] = k .. "=" .. M.fmt_value(p[k]) end
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

return M
