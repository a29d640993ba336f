-- The "text" handler: a sweep's rows as a table, a terminal chart (one bar per measured
-- variant) and the counts, with each reason once. Rows: { index, params, kind = "measured" |
-- "pruned" | "failed" | "cancelled" | "skipped", reason, ms, gbps, tflops, ratio, verified, slow, remeasured,
-- gpu, compile_ms, cache, cached }.
local common = require("cuasync.tools.report.common")
local row_schema = require("cuasync.tools.sweep.row")
local spread = require("cuasync.model.spread")

local M = {}
local fmt_value, figure = common.fmt_value, common.figure

local function pad(s, n) s = tostring(s) return #s >= n and s or s .. (" "):rep(n - #s) end
local function lpad(s, n) s = tostring(s) return #s >= n and s or (" "):rep(n - #s) .. s end

-- A column's cell: numbers as the reports print them, "-" for none.
local function cell(v)
  if v == nil or v == "" then return "-" end
  if type(v) == "number" and v ~= math.floor(v) then return ("%.4g"):format(v) end
  return common.fmt_value(v)
end

-- The extra columns asked for (o.columns: names of the row schema's columns), checked.
local function extra_columns(o)
  local cols = o and o.columns or {}
  local i, c = row_schema.unknown_column(cols)
  if i then
    error(("cuasync.sweep.print: columns[%d] is %q, not a column (columns: %s)"):format(i, tostring(c),
      table.concat(row_schema.fields("column"), ", ")), 3)
  end
  return cols
end

-- The table, the chart (one bar per measured variant) and the counts, as one string.
-- o.columns: more of the row's columns, by name (sm_mhz, power_w, temp_c, reasons, ceiling, ...).
function M.text(S, o)
  local extra = extra_columns(o)
  local R = S.result or {}
  local params_text = common.params_text
  local order, rows = S.order, S.rows
  local out = {}
  local head = { "#" }
  for _, k in ipairs(order) do head[#head + 1] = k end
  local widths = {}
  local cells = {}
  local unit = S.unit
  local regs = false   -- registers and spills: shown when ptxas reported them (a compiled program)
  for _, r in ipairs(rows) do if r.registers then regs = true break end end
  local based, spreads = false, false   -- the baseline's figure beside each ratio; the spread of the rounds
  for _, r in ipairs(rows) do based, spreads = based or r.base_ms ~= nil, spreads or r.spread ~= nil end
  local cols = { "status", "ms", unit, "ratio" }
  if based then cols[#cols + 1] = "base ms" end
  if spreads then cols[#cols + 1] = "spread" end
  cols[#cols + 1] = "compile"
  cols[#cols + 1] = "gpu"
  if regs then cols[#cols + 1] = "regs" cols[#cols + 1] = "spill" end
  for _, c in ipairs(extra) do cols[#cols + 1] = c end
  for _, c in ipairs(cols) do head[#head + 1] = c end
  cells[1] = head
  for _, r in ipairs(rows) do
    local line = { tostring(r.index) }
    for _, k in ipairs(order) do line[#line + 1] = fmt_value(r.params[k]) end
    local status = r.kind == "measured" and (r.verified == false and "unverified" or r.slow and "slow"
                   or r.cached and "cached" or r.remeasured and "ok*" or "ok")
                   -- compiled, not launched (no GPU): its compile and resources are what it has
                   or (r.kind == "skipped" and r.compile_ms and tostring(r.reason):find("^launches skipped") and "compiled")
                   or r.kind
    line[#line + 1] = status
    line[#line + 1] = r.ms and ("%.4f"):format(r.ms) or "-"
    local v = unit == "TFLOP/s" and r.tflops or r.gbps
    line[#line + 1] = v and ("%.1f"):format(v) or "-"
    line[#line + 1] = r.ratio and ("%.3f"):format(r.ratio) or "-"
    if based then line[#line + 1] = r.base_ms and ("%.4f"):format(r.base_ms) or "-" end
    if spreads then line[#line + 1] = r.spread and ("%.1f%%%s"):format(100 * r.spread, r.stable == false and "!" or "") or "-" end
    line[#line + 1] = r.compile_ms and ("%.0f ms %s"):format(r.compile_ms, r.cache or "") or "-"
    line[#line + 1] = r.gpu and tostring(r.gpu) or "-"
    if regs then
      line[#line + 1] = r.registers and tostring(r.registers) or "-"
      line[#line + 1] = r.spills and tostring(r.spills) or "-"
    end
    for _, c in ipairs(extra) do line[#line + 1] = cell(r[c]) end
    cells[#cells + 1] = line
  end
  for _, line in ipairs(cells) do
    for i, c in ipairs(line) do widths[i] = math.max(widths[i] or 0, #c) end
  end
  for n, line in ipairs(cells) do
    local t = {}
    for i, c in ipairs(line) do t[i] = (i <= #order + 2 and i > 1 and n > 0) and pad(c, widths[i]) or lpad(c, widths[i]) end
    out[#out + 1] = table.concat(t, "  ")
  end
  if R.baseline then
    local b = R.baseline
    out[#out + 1] = ("baseline %s: %.4f ms%s%s"):format(b.name, b.ms, b.gbps and (" %.1f GB/s"):format(b.gbps) or
      (b.tflops and (" %.1f TFLOP/s"):format(b.tflops) or ""),
      based and " in the last rounds timed (each row's ratio is to its own rounds' base ms)" or "")
  end
  -- the chart: one bar per measured variant, scaled to the best
  local best = common.best(rows)
  if best then
    local what = best.ratio and "ratio to " .. (S.baseline_name or "the baseline") or (unit or "1/ms")
    out[#out + 1] = ""
    out[#out + 1] = ("chart: %s (bar = 40 columns at the best)"):format(what)
    local label_w = 0
    local labels = {}
    for _, r in ipairs(rows) do
      if r.kind == "measured" and figure(r) then
        labels[r] = params_text(order, r.params)
        label_w = math.max(label_w, #labels[r])
      end
    end
    for _, r in ipairs(rows) do
      if labels[r] then
        local f = figure(r)
        local n = math.floor(40 * f / figure(best) + 0.5)
        out[#out + 1] = ("%s  %s %s%s"):format(pad(labels[r], label_w), ("#"):rep(n) .. (" "):rep(40 - n),
          f < 10 and ("%.3f"):format(f) or ("%.1f"):format(f), r == best and "  best" or "")
      end
    end
  end
  local counts = { measured = 0, pruned = 0, failed = 0, skipped = 0, cancelled = 0, slow = 0, unstable = 0 }
  for _, r in ipairs(rows) do
    counts[r.kind] = (counts[r.kind] or 0) + 1
    if r.slow then counts.slow = counts.slow + 1 end
    if r.kind == "measured" and r.stable == false and not r.slow then counts.unstable = counts.unstable + 1 end
  end
  out[#out + 1] = ""
  out[#out + 1] = ("%d points: %d measured, %d pruned, %d failed, %d skipped"):format(#rows, counts.measured,
    counts.pruned, counts.failed, counts.skipped) .. (counts.cancelled > 0 and (", %d cancelled"):format(counts.cancelled) or "")
  if counts.slow > 0 then
    out[#out + 1] = ("  %d of the measured stopped early as slow (over %gx the best time per unit of work after %d round%s: partial figures)"):format(
      counts.slow, S.slow_factor or 2, S.slow_after or 1, (S.slow_after or 1) == 1 and "" or "s")
  end
  if counts.unstable > 0 then
    out[#out + 1] = ("  %d of the measured are unstable (!: the spread of their rounds is over %.1f%%, spread_limit)"):format(
      counts.unstable, 100 * (S.spread_limit or spread.LIMIT))
  end
  if R.strategy and R.strategy ~= "exhaustive" then
    out[#out + 1] = ("strategy %s%s: %d points evaluated"):format(R.strategy, R.seed and (", seed " .. R.seed) or "", R.evaluated or 0)
  end
  if R.complete == false then
    out[#out + 1] = ("INCOMPLETE: %s; the best below is the best found, not the best of the space"):format(R.stopped or "stopped early")
  end
  local st = R.store or {}
  if st.damaged and st.damaged > 0 then
    out[#out + 1] = ("%d stored entr%s of %s %s not trusted and measured again"):format(st.damaged, st.damaged == 1 and "y" or "ies",
      st.path or "the result store", st.old and "predate sealed entries:" or "failed their integrity check:")
  end
  for _, n in ipairs(R.notes or {}) do out[#out + 1] = "note: " .. n end
  if R.wall_s then
    out[#out + 1] = ("in %.2f s: compiles %.2f s, measuring %.2f s%s"):format(R.wall_s, R.compile_s or 0,
      R.wall_s - (R.compile_s or 0), R.gpus and #R.gpus > 1 and (" on GPUs " .. table.concat(R.gpus, ", ")) or "")
  end
  -- the reasons, each once, with the points it holds for
  local reasons, seen = {}, {}
  for _, r in ipairs(rows) do
    if r.reason and r.kind ~= "measured" then
      local key = r.kind .. "\0" .. r.reason
      if not seen[key] then seen[key] = { kind = r.kind, reason = r.reason, idx = {} }; reasons[#reasons + 1] = seen[key] end
      table.insert(seen[key].idx, r.index)
    end
  end
  for _, g in ipairs(reasons) do
    local idx = g.idx
    local which = #idx == 1 and ("#%d"):format(idx[1]) or ("%d points (#%s)"):format(#idx,
      #idx > 12 and (table.concat({ unpack(idx, 1, 12) }, ", #") .. ", ...") or table.concat(idx, ", #"))
    out[#out + 1] = ("  %s %s: %s"):format(which, g.kind, g.reason)
  end
  if best then
    local measured = {}
    for _, r in ipairs(rows) do if row_schema.ok(r) and r.times then measured[#measured + 1] = r end end
    local verdict = best.times and spread.verdict(best, measured) or nil
    out[#out + 1] = ("best: %s (%s)%s%s"):format(params_text(order, best.params),
      best.ratio and ("%.3f of %s"):format(best.ratio, S.baseline_name) or ("%.4f ms"):format(best.ms),
      best.remeasured and (", re-measured alone (%.4f ms in the sweep's rounds)"):format(best.remeasured) or "",
      verdict and (": " .. verdict) or "")
  end
  return table.concat(out, "\n")
end


-- The file's text (M.write writes it; a hard stop keeps it, tools/sweep/stop.lua).
function M.render(S, o) return M.text(S, o) .. "\n" end

function M.write(S, path, o)
  return common.write("sweep.text", path, M.render(S, o))
end

return M
