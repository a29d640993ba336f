-- The "plot" handler: a data file and a gnuplot script beside the path, rendered to PNG or SVG
-- (by the extension) when gnuplot is installed; where it is not, both are still written and
-- the error says how to render them.
local util = require("cuasync.util")
local isolate = require("cuasync.tools.isolate")
local fs = require("cuasync.fs")
local common = require("cuasync.tools.report.common")

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
end

-- plot(S, path, { x = param, y = "GB/s" | "ratio" | "TFLOP/s" | "ms", series = param }): a data file
-- and a gnuplot script beside `path`, rendered to PNG or SVG (by the extension) when gnuplot is there.
function M.write(S, path, o)
  util.cstring("sweep.plot", "path", path)
  o = o or {}
  util.kind("sweep.plot", "options", o, "table")
  util.known_fields("sweep.plot", o, { x = true, y = true, series = true, title = true })
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
  table.sort(names)
  local data = path:gsub("%.%w+$", "") .. ".dat"
  local script = path:gsub("%.%w+$", "") .. ".gp"
  local lines = {}
  for _, s in ipairs(names) do
    local xs = {}
    for xv in pairs(groups[s]) do xs[#xs + 1] = xv end
    table.sort(xs, function(a, b)
      if type(a) == "number" and type(b) == "number" then return a < b end
      return tostring(a) < tostring(b)
    end)
    lines[#lines + 1] = ("# %s\n"):format(s)
    for _, xv in ipairs(xs) do lines[#lines + 1] = ("%s %s\n"):format(common.fmt_value(xv), ("%.6g"):format(groups[s][xv])) end
    lines[#lines + 1] = "\n\n"
  end
  common.write("sweep.plot", data, table.concat(lines))
  local plots = {}
  for i, s in ipairs(names) do
    plots[i] = ("'%s' index %d using 1:2 with linespoints lw 2 pt 7 title '%s%s'"):format(data, i - 1,
      o.series and (o.series .. "=") or "", s)
  end
  common.write("sweep.plot", script, ("set terminal %s\nset output '%s'\nset title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n"):format(
    term, path, (o.title or (S.name .. (S.result and S.result.device_name and (" on " .. S.result.device_name) or ""))):gsub("'", ""), x,
    y == "ratio" and ("ratio to " .. (S.baseline_name or "baseline")) or y)
    .. "plot " .. table.concat(plots, ", \\\n     ") .. "\n")
  if not M.gnuplot() then
    util.fail("sweep.plot", ("gnuplot is not installed (Debian: apt-get install gnuplot-nox); the data and the script are written: %s, %s (gnuplot %s renders them)"):format(
      data, script, script))
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
