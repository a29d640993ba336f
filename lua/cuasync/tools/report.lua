-- A sweep's rows as a table, a terminal chart, CSV, JSON (dkjson) and a gnuplot plot. Pure
-- formatting over rows: { index, params, kind = "measured" | "pruned" | "failed" | "skipped",
-- reason, ms, gbps, tflops, ratio, verified, gpu, compile_ms, cache, cached }.
local util = require("cuasync.util")
local toolkit = require("cuasync.toolkit")

local M = {}

local function fmt_value(v)
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
    return ("%.6g"):format(v)
  end
  return tostring(v)
end
M.fmt_value = fmt_value

function M.params_text(order, p)
  local t = {}
  for _, k in ipairs(order) do t[#t + 1] = k .. "=" .. fmt_value(p[k]) end
  return table.concat(t, " ")
end

-- The figure a row is ranked by: its ratio to the baseline, else GB/s, else TFLOP/s, else 1/ms.
local function figure(r)
  return r.ratio or r.gbps or r.tflops or (r.ms and 1 / r.ms)
end
M.figure = figure

local function pad(s, n) s = tostring(s) return #s >= n and s or s .. (" "):rep(n - #s) end
local function lpad(s, n) s = tostring(s) return #s >= n and s or (" "):rep(n - #s) .. s end

-- The table, the chart (one bar per measured variant) and the counts, as one string.
function M.text(S)
  local order, rows = S.order, S.rows
  local out = {}
  local head = { "#" }
  for _, k in ipairs(order) do head[#head + 1] = k end
  local widths = {}
  local cells = {}
  local unit = S.unit
  local cols = { "status", "ms", unit, "ratio", "compile", "gpu" }
  for _, c in ipairs(cols) do head[#head + 1] = c end
  cells[1] = head
  for _, r in ipairs(rows) do
    local line = { tostring(r.index) }
    for _, k in ipairs(order) do line[#line + 1] = fmt_value(r.params[k]) end
    local status = r.kind == "measured" and (r.verified == false and "unverified" or (r.cached and "cached" or "ok")) or r.kind
    line[#line + 1] = status
    line[#line + 1] = r.ms and ("%.4f"):format(r.ms) or "-"
    local v = unit == "TFLOP/s" and r.tflops or r.gbps
    line[#line + 1] = v and ("%.1f"):format(v) or "-"
    line[#line + 1] = r.ratio and ("%.3f"):format(r.ratio) or "-"
    line[#line + 1] = r.compile_ms and ("%.0f ms %s"):format(r.compile_ms, r.cache or "") or "-"
    line[#line + 1] = r.gpu and tostring(r.gpu) or "-"
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
  if S.baseline_row then
    local b = S.baseline_row
    out[#out + 1] = ("baseline %s: %.4f ms%s"):format(b.name, b.ms, b.gbps and (" %.1f GB/s"):format(b.gbps) or
      (b.tflops and (" %.1f TFLOP/s"):format(b.tflops) or ""))
  end
  -- the chart: one bar per measured variant, scaled to the best
  local best
  for _, r in ipairs(rows) do
    if r.kind == "measured" and r.verified ~= false and figure(r) and (not best or figure(r) > figure(best)) then best = r end
  end
  if best then
    local what = best.ratio and "ratio to " .. (S.baseline_name or "the baseline") or (unit or "1/ms")
    out[#out + 1] = ""
    out[#out + 1] = ("chart: %s (bar = 40 columns at the best)"):format(what)
    local label_w = 0
    local labels = {}
    for _, r in ipairs(rows) do
      if r.kind == "measured" and figure(r) then
        labels[r] = M.params_text(order, r.params)
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
  local counts = { measured = 0, pruned = 0, failed = 0, skipped = 0 }
  for _, r in ipairs(rows) do counts[r.kind] = counts[r.kind] + 1 end
  out[#out + 1] = ""
  out[#out + 1] = ("%d points: %d measured, %d pruned, %d failed, %d skipped"):format(#rows, counts.measured,
    counts.pruned, counts.failed, counts.skipped)
  if S.wall_s then
    out[#out + 1] = ("in %.2f s: compiles %.2f s, measuring %.2f s%s"):format(S.wall_s, S.compile_s or 0,
      S.wall_s - (S.compile_s or 0), S.gpus and #S.gpus > 1 and (" on GPUs " .. table.concat(S.gpus, ", ")) or "")
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
  if best then out[#out + 1] = ("best: %s (%s)"):format(M.params_text(order, best.params),
    best.ratio and ("%.3f of %s"):format(best.ratio, S.baseline_name) or ("%.4f ms"):format(best.ms)) end
  return table.concat(out, "\n")
end

local function writable(where, path)
  util.cstring(where, "path", path)
  local f, err = io.open(path, "w")
  if not f then util.fail(where, ("cannot write %s: %s"):format(path, tostring(err))) end
  return f
end
M.writable = writable

local function csv_cell(v)
  if v == nil then return "" end
  local s = type(v) == "number" and fmt_value(v) or tostring(v)
  if s:find('[,"\n\r]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

M.CSV_COLUMNS = { "kind", "verified", "ms", "gbps", "tflops", "ratio", "gpu", "compile_ms", "cache", "cached", "reason" }

function M.csv(S, path)
  local f = writable("sweep.csv", path)
  local head = { "index" }
  for _, k in ipairs(S.order) do head[#head + 1] = k end
  for _, c in ipairs(M.CSV_COLUMNS) do head[#head + 1] = c end
  f:write(table.concat(head, ","), "\n")
  for _, r in ipairs(S.rows) do
    local line = { csv_cell(r.index) }
    for _, k in ipairs(S.order) do line[#line + 1] = csv_cell(r.params[k]) end
    for _, c in ipairs(M.CSV_COLUMNS) do line[#line + 1] = csv_cell(r[c]) end
    f:write(table.concat(line, ","), "\n")
  end
  f:close()
  return path
end

-- Parse what csv() wrote (a round trip for the specs and for --merge of CSV files).
function M.read_csv(path)
  local f = io.open(path, "r")
  if not f then util.fail("sweep.read_csv", ("cannot read %s"):format(path)) end
  local text = f:read("*a")
  f:close()
  local records, fields, cell, i, quoted = {}, {}, {}, 1, false
  while i <= #text do
    local ch = text:sub(i, i)
    if quoted then
      if ch == '"' then
        if text:sub(i + 1, i + 1) == '"' then cell[#cell + 1] = '"'; i = i + 1 else quoted = false end
      else cell[#cell + 1] = ch end
    elseif ch == '"' then quoted = true
    elseif ch == "," then fields[#fields + 1] = table.concat(cell); cell = {}
    elseif ch == "\n" then
      fields[#fields + 1] = table.concat(cell); cell = {}
      records[#records + 1] = fields; fields = {}
    else cell[#cell + 1] = ch end
    i = i + 1
  end
  return records
end

local function json_lib()
  local ok, dkjson = pcall(require, "dkjson")
  if not ok then
    util.fail("sweep", "JSON needs dkjson (Debian: apt-get install lua-dkjson)")
  end
  return dkjson
end
M.json_lib = json_lib

function M.document(S)
  return { name = S.name, order = S.order, device = S.device_name, unit = S.unit, baseline = S.baseline_row,
           rows = S.rows }
end

function M.json(S, path)
  local dkjson = json_lib()
  local f = writable("sweep.json", path)
  f:write(dkjson.encode(M.document(S), { indent = true }), "\n")
  f:close()
  return path
end

function M.read_json(path)
  local dkjson = json_lib()
  local text = toolkit.read_file(path)
  if not text then util.fail("sweep.load", ("cannot read %s"):format(tostring(path))) end
  local doc, _, err = dkjson.decode(text)
  if type(doc) ~= "table" or type(doc.rows) ~= "table" then
    util.fail("sweep.load", ("%s is not a sweep's JSON (%s)"):format(path, tostring(err or "no rows")))
  end
  return doc
end

function M.gnuplot()
  local p = io.popen("command -v gnuplot 2>/dev/null")
  local where = p:read("*l")
  p:close()
  return where
end

-- plot(S, path, { x = param, y = "GB/s" | "ratio" | "TFLOP/s" | "ms", series = param }): a data file
-- and a gnuplot script beside `path`, rendered to PNG or SVG (by the extension) when gnuplot is there.
function M.plot(S, path, o)
  util.cstring("sweep.plot", "path", path)
  o = o or {}
  util.kind("sweep.plot", "options", o, "table")
  util.known_fields("sweep.plot", o, { x = true, y = true, series = true, title = true })
  local x = o.x or S.order[1]
  local known = {}
  for _, k in ipairs(S.order) do known[k] = true end
  if not known[x] then util.fail("sweep.plot", ("x = %s is not a parameter of the sweep (%s)"):format(util.describe(x), table.concat(S.order, ", "))) end
  if o.series ~= nil and not known[o.series] then
    util.fail("sweep.plot", ("series = %s is not a parameter of the sweep (%s)"):format(util.describe(o.series), table.concat(S.order, ", ")))
  end
  local y = o.y or (S.baseline_name and "ratio" or S.unit)
  local FIELD = { ["GB/s"] = "gbps", ["TFLOP/s"] = "tflops", ratio = "ratio", ms = "ms" }
  if not FIELD[y] then util.fail("sweep.plot", ('y must be "GB/s", "TFLOP/s", "ratio" or "ms" (got %s)'):format(util.describe(y))) end
  local term = path:match("%.svg$") and "svg size 900,540 noenhanced" or path:match("%.png$") and "pngcairo size 900,540 noenhanced"
  if not term then util.fail("sweep.plot", ("path must end in .png or .svg (got %s)"):format(util.describe(path))) end
  -- one data block per series value; points in x order; the best of the other params at each x
  local groups, names = {}, {}
  for _, r in ipairs(S.rows) do
    local v = r[FIELD[y]]
    if r.kind == "measured" and r.verified ~= false and v then
      local s = o.series and fmt_value(r.params[o.series]) or y
      if not groups[s] then groups[s] = {}; names[#names + 1] = s end
      local xv = r.params[x]
      local g = groups[s]
      if g[xv] == nil or (y == "ms" and v < g[xv]) or (y ~= "ms" and v > g[xv]) then g[xv] = v end
    end
  end
  if #names == 0 then util.fail("sweep.plot", "no measured, verified rows to plot") end
  table.sort(names)
  local data = path:gsub("%.%w+$", "") .. ".dat"
  local script = path:gsub("%.%w+$", "") .. ".gp"
  local f = writable("sweep.plot", data)
  for _, s in ipairs(names) do
    local xs = {}
    for xv in pairs(groups[s]) do xs[#xs + 1] = xv end
    table.sort(xs, function(a, b)
      if type(a) == "number" and type(b) == "number" then return a < b end
      return tostring(a) < tostring(b)
    end)
    f:write(("# %s\n"):format(s))
    for _, xv in ipairs(xs) do f:write(("%s %s\n"):format(fmt_value(xv), ("%.6g"):format(groups[s][xv]))) end
    f:write("\n\n")
  end
  f:close()
  local g = writable("sweep.plot", script)
  local plots = {}
  for i, s in ipairs(names) do
    plots[i] = ("'%s' index %d using 1:2 with linespoints lw 2 pt 7 title '%s%s'"):format(data, i - 1,
      o.series and (o.series .. "=") or "", s)
  end
  g:write(("set terminal %s\nset output '%s'\nset title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n"):format(
    term, path, (o.title or (S.name .. (S.device_name and (" on " .. S.device_name) or ""))):gsub("'", ""), x,
    y == "ratio" and ("ratio to " .. (S.baseline_name or "baseline")) or y))
  g:write("plot ", table.concat(plots, ", \\\n     "), "\n")
  g:close()
  if not M.gnuplot() then
    util.fail("sweep.plot", ("gnuplot is not installed (Debian: apt-get install gnuplot-nox); the data and the script are written: %s, %s (gnuplot %s renders them)"):format(
      data, script, script))
  end
  local ok = os.execute(("gnuplot %q 2>/dev/null"):format(script))
  if ok ~= 0 and ok ~= true then util.fail("sweep.plot", ("gnuplot failed on %s"):format(script)) end
  return path
end

return M
