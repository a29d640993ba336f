-- The "plot" handler: a chart of a sweep's measured rows. A .svg path is drawn here, in Lua
-- (svg_chart.lua: no gnuplot needed, the same file on every machine); a .png path is rendered by
-- gnuplot where it is installed, and where it is not, the chart is drawn as SVG beside it (PATH.svg)
-- and the call says so (its second value). Either way a data file and a gnuplot script are
-- written beside the path (PATH.dat, PATH.gp: gnuplot PATH.gp draws the chart again).
local util = require("cuasync.util")
local isolate = require("cuasync.tools.isolate")
local fs = require("cuasync.fs")
local common = require("cuasync.tools.report.common")
local svg_chart = require("cuasync.tools.report.svg_chart")

local M = {}

-- gnuplot's path, or nil where it is not installed.
function M.gnuplot()
  return isolate.which("gnuplot")
end

local FIELD = { ["GB/s"] = "gbps", ["TFLOP/s"] = "tflops", ratio = "ratio", ms = "ms" }

-- What is wrong with a plot's arguments, or nil: { field = "path" | "x" | "series" | "y", value,
-- rule (what it breaks, without the value), message (the API's sentence) }. The command checks
-- its --plot, --x and --series with it before the sweep runs.
function M.check(S, path, o)
  local function bad(field, value, rule, message) return { field = field, value = value, rule = rule, message = message } end
  if not (path:match("%.svg$") or path:match("%.png$")) then
    return bad("path", path, "must end in .png or .svg", ("path must end in .png or .svg (got %s)"):format(util.describe(path)))
  end
  local known = {}
  for _, k in ipairs(S.order) do known[k] = true end
  for _, f in ipairs({ "x", "series" }) do
    local v = o[f]
    if v ~= nil and not known[v] then
      local rule = ("is not a parameter of the sweep (%s)"):format(table.concat(S.order, ", "))
      return bad(f, v, rule, ("%s = %s %s"):format(f, util.describe(v), rule))
    end
  end
  if o.y ~= nil and not FIELD[o.y] then
    return bad("y", o.y, 'must be "GB/s", "TFLOP/s", "ratio" or "ms"', ('y must be "GB/s", "TFLOP/s", "ratio" or "ms" (got %s)'):format(util.describe(o.y)))
  end
  if o.log ~= nil and not (o.log == "x" or o.log == "y" or o.log == "xy") then
    return bad("log", o.log, 'must be "x", "y" or "xy"', ('log must be "x", "y" or "xy" (got %s)'):format(util.describe(o.log)))
  end
end

-- plot(S, path, { x = param, y = "GB/s" | "ratio" | "TFLOP/s" | "ms", series = param, title, log = "x" | "y" | "xy" })
-- -> the chart's path[, a note: "gnuplot is not installed: ..." where a .png became a .svg]. One line
-- per series value, the best of the other params at each x, in x order.
function M.write(S, path, o)
  util.cstring("sweep.plot", "path", path)
  o = o or {}
  util.kind("sweep.plot", "options", o, "table")
  util.known_fields("sweep.plot", o, { x = true, y = true, series = true, title = true, log = true })
  local bad = M.check(S, path, o)
  if bad then util.fail("sweep.plot", bad.message) end
  local x = o.x or S.order[1]
  local y = o.y or (S.baseline_name and "ratio" or S.unit)
  local term = path:match("%.svg$") and "svg size 900,540 noenhanced" or "pngcairo size 900,540 noenhanced"
  -- one data block per series value; points in x order; the best of the other params at each x
  local groups, names = {}, {}
  for _, r in ipairs(S.rows) do
    local v = r[FIELD[y]]
    if r.kind == "measured" and r.verified ~= false and v then
      local s = o.series and common.fmt_value(r.params[o.series]) or y
      if not groups[s] then groups[s] = {}; names[#names + 1] = s end
      local xv = r.params[x]
      local g = groups[s]
      if g[xv] == nil or (y == "ms" and v < g[xv]) or (y ~= "ms" and v > g[xv]) then g[xv] = v end
    end
  end
  if #names == 0 then util.fail("sweep.plot", "no measured, verified rows to plot") end
  table.sort(names, function(a, b)   -- series values in order: numbers by value
    local na, nb = tonumber(a), tonumber(b)
    if na and nb then return na < nb end
    return a < b
  end)
  local data = path:gsub("%.%w+$", "") .. ".dat"
  local script = path:gsub("%.%w+$", "") .. ".gp"
  local lines, series = {}, {}
  for _, s in ipairs(names) do
    local xs = {}
    for xv in pairs(groups[s]) do xs[#xs + 1] = xv end
    table.sort(xs, function(a, b)
      if type(a) == "number" and type(b) == "number" then return a < b end
      return tostring(a) < tostring(b)
    end)
    lines[#lines + 1] = ("# %s\n"):format(s)
    local points = {}
    for _, xv in ipairs(xs) do
      lines[#lines + 1] = ("%s %s\n"):format(common.fmt_value(xv), ("%.6g"):format(groups[s][xv]))
      points[#points + 1] = { type(xv) == "number" and xv or common.fmt_value(xv), groups[s][xv] }
    end
    lines[#lines + 1] = "\n\n"
    series[#series + 1] = { name = (o.series and (o.series .. "=") or "") .. s, points = points }
  end
  local title = o.title or (S.name .. (S.result and S.result.device_name and (" on " .. S.result.device_name) or ""))
  local ylabel = y == "ratio" and ("ratio to " .. (S.baseline_name or "baseline")) or y
  common.write("sweep.plot", data, table.concat(lines))
  local plots = {}
  for i, s in ipairs(names) do
    plots[i] = ("'%s' index %d using 1:2 with linespoints lw 2 pt 7 title '%s%s'"):format(data, i - 1,
      o.series and (o.series .. "=") or "", s)
  end
  common.write("sweep.plot", script, ("set terminal %s\nset output '%s'\nset title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n%s"):format(
    term, path, (title:gsub("'", "")), x, ylabel, o.log and ("set logscale %s\n"):format(o.log) or "")
    .. "plot " .. table.concat(plots, ", \\\n     ") .. "\n")
  local svg = path:match("%.svg$") and path or (not M.gnuplot() and path:gsub("%.png$", ".svg"))
  if svg then   -- drawn here: a .svg asked for, or a .png where gnuplot is not installed
    common.write("sweep.plot", svg, svg_chart.render{ title = title, xlabel = x, ylabel = ylabel, series = series, log = o.log })
    if svg == path then return path end
    return svg, ("gnuplot is not installed, so the chart is SVG (drawn in Lua) instead of %s; gnuplot %s renders that"):format(path, script)
  end
  local ok, out, code = isolate.command({ "gnuplot", script })
  if not ok then
    util.fail("sweep.plot", ("gnuplot failed on %s (exit %s): %s"):format(script, tostring(code), (out:gsub("%s+$", "")):sub(-300)))
  end
  -- gnuplot exits 0 when it could not write the image (a full disk): the image is checked whole
  -- (a PNG ends with its IEND chunk, an SVG with </svg>), as fs.lua checks every write of ours
  local kind, size = fs.kind(path)
  local image = kind == "file" and size > 0 and fs.read(path)
  local whole = image and (path:match("%.svg$") and image:find("</svg>%s*$") or image:find("IEND", #image - 16, true))
  if not whole then
    util.fail("sweep.plot", ("cannot write %s: gnuplot ran, but the image is %s (a full disk?); the data and the script are written: %s, %s"):format(
      path, kind ~= "file" and ("not a file (" .. kind .. ")") or "not whole", data, script))
  end
  return path
end

return M
