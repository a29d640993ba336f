-- The same sweep run several times, compared (examples/repeat.lua runs them, each in its own
-- process): per variant its figure in each run and their range, whether it was stable in every
-- run, each run's winner and verdict, and whether the winner changed. Pure: reads the runs'
-- JSON documents (S:write("json")), no GPU.
local row = require("cuasync.tools.sweep.row")
local spread = require("cuasync.model.spread")

local M = {}

-- docs: a list of sweep JSON documents (decoded). Returns { runs = { { best, verdict, separated } },
-- variants = { { key, figures = { [run] = f }, min, max, range, stable } } sorted by mean figure,
-- winner_changed, all_tied_or_same, what = "ratio" | "GB/s" | ... }.
function M.compare(docs)
  if type(docs) ~= "table" or #docs == 0 then error("cuasync.sweep.repeat: no runs to compare", 2) end
  local order = docs[1].order
  local by, list = {}, {}
  local out = { runs = {}, variants = list }
  for i, doc in ipairs(docs) do
    local measured = {}
    for _, r in ipairs(doc.rows or {}) do
      if row.ok(r) then
        measured[#measured + 1] = r
        local key = row.params_text(order, r.params)
        local v = by[key]
        if not v then v = { key = key, figures = {}, stable = true, n = 0 } by[key] = v list[#list + 1] = v end
        v.figures[i] = row.figure(r)
        v.n = v.n + 1
        if r.stable ~= true then v.stable = false end
        out.what = out.what or (r.ratio and "ratio") or (r.gbps and "GB/s") or (r.tflops and "TFLOP/s") or "1/ms"
      end
    end
    local spreads, stable = {}, 0
    for _, r in ipairs(measured) do
      if r.spread and not r.slow then spreads[#spreads + 1] = r.spread end
      if r.stable == true then stable = stable + 1 end
    end
    local best = row.best(measured)
    local verdict, separated
    if best and best.times then verdict, separated = spread.verdict(best, measured) end
    out.runs[i] = { best = best and row.params_text(order, best.params), figure = best and row.figure(best),
                    verdict = verdict, separated = separated, measured = #measured, stable = stable,
                    median_spread = #spreads > 0 and select(2, spread.quartiles(spreads)) or nil }
  end
  for _, v in ipairs(list) do
    local lo, hi, sum = math.huge, -math.huge, 0
    for i = 1, #docs do
      local f = v.figures[i]
      if f then lo, hi, sum = math.min(lo, f), math.max(hi, f), sum + f end
    end
    v.min, v.max, v.mean = lo, hi, sum / v.n
    v.range = v.n > 1 and hi / lo - 1 or nil
    if v.n < #docs then v.stable = false end
  end
  table.sort(list, function(a, b) return a.mean > b.mean end)
  local first = out.runs[1].best
  out.winner_changed = false
  for _, r in ipairs(out.runs) do if r.best ~= first then out.winner_changed = true end end
  -- a changed winner is acceptable only where every run said its best was tied within noise
  out.all_tied = true
  for _, r in ipairs(out.runs) do if r.separated then out.all_tied = false end end
  return out
end

-- The comparison as text: each run's best line, the verdict on the winner, the variants' table
-- (the top `top` by mean figure) and the largest range among rows stable in every run.
function M.text(c, top)
  local out = {}
  for i, r in ipairs(c.runs) do
    out[#out + 1] = ("run %d best: %s (%s %s)%s"):format(i, r.best or "none", c.what or "", r.figure and ("%.4g"):format(r.figure) or "-",
      r.verdict and (": " .. r.verdict) or "")
    out[#out + 1] = ("  %d of %d measured rows stable; median spread %s"):format(r.stable or 0, r.measured or 0,
      r.median_spread and ("%.1f%%"):format(100 * r.median_spread) or "-")
  end
  if not c.winner_changed then
    out[#out + 1] = ("the winner is the same in all %d runs"):format(#c.runs)
  elseif c.all_tied then
    out[#out + 1] = "the winner changed, and every run said its best was tied within noise"
  else
    out[#out + 1] = "THE WINNER CHANGED although a run said its best was separated: the ranking does not hold"
  end
  local width = 7
  for i = 1, math.min(#c.variants, top or 15) do width = math.max(width, #c.variants[i].key) end
  -- padded by hand: string.format takes widths below 100, and a variant's key is often longer
  local function pad(s) return s .. (" "):rep(width - #s) end
  local head = { pad("variant") }
  for i = 1, #c.runs do head[#head + 1] = ("%8s"):format("run " .. i) end
  head[#head + 1] = "   range  stable"
  out[#out + 1] = table.concat(head, " ")
  local worst
  for k, v in ipairs(c.variants) do
    if v.stable and v.range and (not worst or v.range > worst.range) then worst = v end
    if k <= (top or 15) then
      local line = { pad(v.key) }
      for i = 1, #c.runs do line[#line + 1] = v.figures[i] and ("%8.4g"):format(v.figures[i]) or ("%8s"):format("-") end
      line[#line + 1] = ("  %5.1f%%  %s"):format(100 * (v.range or 0), v.stable and "yes" or "no")
      out[#out + 1] = table.concat(line, " ")
    end
  end
  if #c.variants > (top or 15) then out[#out + 1] = ("(%d more variants)"):format(#c.variants - (top or 15)) end
  out[#out + 1] = worst and ("rows stable in every run: the largest range is %.1f%% (%s)"):format(100 * worst.range, worst.key)
                  or "no row was stable in every run"
  return table.concat(out, "\n")
end

return M
