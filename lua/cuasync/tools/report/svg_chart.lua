-- A chart as SVG text, in Lua: no gnuplot, no process, the same file on every machine. plot.lua
-- draws a sweep with it. Lines (one <polyline class="series"> per series, its points in x order,
-- a circle at each) over a numeric x, or grouped bars over categories; linear or log axes.
--   svg_chart.render{ title, xlabel, ylabel, series = { { name = s, points = { { x, y }, ... } }, ... },
--                     kind = "lines" | "bars", log = "" | "x" | "y" | "xy", width = 900, height = 540 } -> text
-- x may be numbers (lines: placed by value) or strings (categories, in the order first seen; bars
-- always take x as categories). Text is escaped (& < > " '); a log axis needs positive values.
local util = require("cuasync.util")

local M = {}

local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22" }
local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

function M.escape(s)
  return (tostring(s):gsub("[%z\1-\8\11\12\14-\31]", "?"):gsub("[&<>\"']", ESC))
end

local function num(v) return (("%.2f"):format(v):gsub("%.?0+$", "")) end

-- The ticks of [lo, hi]: 1, 2 or 5 times a power of ten, about 6 of them (linear; whole numbers
-- where the values are: integer), the decades,
-- and their 2s and 5s where fewer than three decades show (log). Returns the ticks, and the
-- range widened to round values so that the data sits inside them.
local function ticks(lo, hi, log, integer)
  local t = {}
  if log then   -- the range widened to 1, 2 or 5 times a power of ten at each end
    local e = 10 ^ math.floor(math.log10(lo) + 1e-9)
    lo = (lo >= 5 * e * (1 - 1e-9) and 5 or lo >= 2 * e * (1 - 1e-9) and 2 or 1) * e
    e = 10 ^ math.floor(math.log10(hi) - 1e-9)
    hi = (hi <= e * (1 + 1e-9) and 1 or hi <= 2 * e * (1 + 1e-9) and 2 or hi <= 5 * e * (1 + 1e-9) and 5 or 10) * e
    local a, b = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    if a == b then a, b = a, a + 1 end
    for e = a, b do
      for _, m in ipairs(b - a < 3 and { 1, 2, 5 } or { 1 }) do
        local v = m * 10 ^ e
        if v >= lo * (1 - 1e-9) and v <= hi * (1 + 1e-9) then t[#t + 1] = v end
      end
    end
    return t, lo, hi
  end
  local raw = (hi - lo) / 6
  local mag = 10 ^ math.floor(math.log10(raw))
  local step = mag
  for _, m in ipairs({ 2, 5, 10 }) do if raw > step then step = m * mag end end
  if integer then step = math.max(step, 1) end   -- stages 1, 2, 4: no tick at 1.5
  local first, last = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
  for i = 0, math.floor((last - first) / step + 0.5) do t[#t + 1] = first + i * step end
  return t, first, last
end

local function label(v)
  if v == 0 then return "0" end
  local a = math.abs(v)
  if a >= 1e6 or a < 1e-3 then return ("%.3g"):format(v) end
  return (("%.6g"):format(v))
end

-- The value range of an axis, padded: a flat series gets room, a bar chart starts at 0 (linear).
local function range(values, log, from_zero)
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(values) do lo, hi = math.min(lo, v), math.max(hi, v) end
  if log then
    if lo == hi then lo, hi = lo / 2, hi * 2 end
    return lo, hi
  end
  if from_zero then lo, hi = math.min(lo, 0), math.max(hi, 0) end
  if lo == hi then lo, hi = lo - (lo == 0 and 1 or math.abs(lo) / 10), hi + (hi == 0 and 1 or math.abs(hi) / 10) end
  return lo, hi
end

local function check(o)
  util.kind("svg_chart", "chart", o, "table")
  util.known_fields("svg_chart", o, { title = true, xlabel = true, ylabel = true, series = true, kind = true, log = true,
                                      width = true, height = true })
  local kind, log = o.kind or "lines", o.log or ""
  if kind ~= "lines" and kind ~= "bars" then util.fail("svg_chart", ('kind must be "lines" or "bars" (got %s)'):format(util.describe(kind))) end
  if not (log == "" or log == "x" or log == "y" or log == "xy") then
    util.fail("svg_chart", ('log must be "", "x", "y" or "xy" (got %s)'):format(util.describe(log)))
  end
  util.list("svg_chart", "series", o.series)
  if #o.series == 0 then util.fail("svg_chart", "series is empty: nothing to draw") end
  for i, s in ipairs(o.series) do
    util.list("svg_chart", ("series[%d].points"):format(i), s.points)
    for j, p in ipairs(s.points) do
      if type(p[2]) ~= "number" or p[2] ~= p[2] or math.abs(p[2]) == math.huge then
        util.fail("svg_chart", ("series[%d].points[%d]: y must be a finite number (got %s)"):format(i, j, util.describe(p[2])))
      end
      if type(p[1]) ~= "number" and type(p[1]) ~= "string" then
        util.fail("svg_chart", ("series[%d].points[%d]: x must be a number or a string (got %s)"):format(i, j, util.describe(p[1])))
      end
    end
  end
  return kind, log
end

function M.render(o)
  local kind, log = check(o)
  local W, Hh = o.width or 900, o.height or 540
  local L, R, T, B = 80, W - 190, 50, Hh - 60      -- the plot area
  -- x: numbers placed by value (lines), else categories in first-seen order
  local numeric = kind == "lines"
  local cats, at, xs, ys = {}, {}, {}, {}
  for _, s in ipairs(o.series) do
    for _, p in ipairs(s.points) do
      numeric = numeric and type(p[1]) == "number"
      if at[p[1]] == nil then cats[#cats + 1] = p[1]; at[p[1]] = #cats end
      ys[#ys + 1] = p[2]
    end
  end
  local xlog, ylog = numeric and log:find("x") ~= nil, log:find("y") ~= nil
  if log:find("x") and not numeric then util.fail("svg_chart", 'log = "x" needs numeric x values (lines)') end
  for _, pair in ipairs({ { xlog, "x" }, { ylog, "y" } }) do
    if pair[1] then
      for _, s in ipairs(o.series) do
        for _, p in ipairs(s.points) do
          local v = pair[2] == "x" and p[1] or p[2]
          if not (v > 0) then util.fail("svg_chart", ("a log %s axis needs values > 0 (got %s in series %s)"):format(pair[2], label(v), tostring(s.name))) end
        end
      end
    end
  end
  local ylo, yhi = range(ys, ylog, kind == "bars")
  local yt
  yt, ylo, yhi = ticks(ylo, yhi, ylog)
  local function f(v, lo, hi, a, b, lg)
    if lg then v, lo, hi = math.log10(v), math.log10(lo), math.log10(hi) end
    return a + (b - a) * (hi == lo and 0.5 or (v - lo) / (hi - lo))
  end
  local function Y(v) return f(v, ylo, yhi, B, T, ylog) end
  local X, xt, xlo, xhi
  if numeric then
    for _, c in ipairs(cats) do xs[#xs + 1] = c end
    xlo, xhi = range(xs, xlog, false)
    local integer = true
    for _, v in ipairs(xs) do integer = integer and v == math.floor(v) end
    xt, xlo, xhi = ticks(xlo, xhi, xlog, integer)
    X = function(v) return f(v, xlo, xhi, L, R, xlog) end
  else
    X = function(v) return L + (R - L) * (at[v] - 0.5) / #cats end
  end
  local out = {}
  local function w(s) out[#out + 1] = s end
  w('<?xml version="1.0" encoding="UTF-8"?>')
  w(('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">'):format(W, Hh, W, Hh))
  w(("<title>%s</title>"):format(M.escape(o.title or "")))
  w(('<rect x="0" y="0" width="%d" height="%d" fill="white"/>'):format(W, Hh))
  w(('<text x="%s" y="28" text-anchor="middle" font-size="16">%s</text>'):format(num((L + R) / 2), M.escape(o.title or "")))
  w('<g class="grid" stroke="#dddddd" stroke-width="1">')
  for _, v in ipairs(yt) do w(('<line x1="%d" y1="%s" x2="%d" y2="%s"/>'):format(L, num(Y(v)), R, num(Y(v)))) end
  for _, v in ipairs(numeric and xt or {}) do w(('<line x1="%s" y1="%d" x2="%s" y2="%d"/>'):format(num(X(v)), T, num(X(v)), B)) end
  w("</g>")
  w('<g class="axes" stroke="black" stroke-width="1">')
  w(('<line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/>'):format(L, B, R, B, L, B, L, T))
  w("</g>")
  w('<g class="ticks">')
  for _, v in ipairs(yt) do w(('<text x="%d" y="%s" text-anchor="end">%s</text>'):format(L - 6, num(Y(v) + 4), M.escape(label(v)))) end
  for _, v in ipairs(numeric and xt or cats) do
    w(('<text x="%s" y="%d" text-anchor="middle">%s</text>'):format(num(X(v)), B + 18, M.escape(numeric and label(v) or v)))
  end
  w("</g>")
  w(('<text x="%s" y="%d" text-anchor="middle">%s</text>'):format(num((L + R) / 2), Hh - 20, M.escape(o.xlabel or "")))
  w(('<text x="20" y="%s" text-anchor="middle" transform="rotate(-90 20 %s)">%s</text>'):format(num((T + B) / 2), num((T + B) / 2),
    M.escape(o.ylabel or "")))
  local band = (R - L) / #cats
  for i, s in ipairs(o.series) do
    s = { name = tostring(s.name or ("series " .. i)), points = s.points }
    local color = COLORS[(i - 1) % #COLORS + 1]
    w(('<g class="series" data-series="%s" fill="%s" stroke="%s">'):format(M.escape(s.name), color, color))
    local pts = {}
    for _, p in ipairs(s.points) do pts[#pts + 1] = p end
    if numeric then table.sort(pts, function(a, b) return a[1] < b[1] end) end
    if kind == "lines" then
      local coords = {}
      for j, p in ipairs(pts) do coords[j] = num(X(p[1])) .. "," .. num(Y(p[2])) end
      w(('<polyline class="series" fill="none" stroke-width="2" points="%s"/>'):format(table.concat(coords, " ")))
      for _, p in ipairs(pts) do
        w(('<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="none"><title>%s: %s, %s</title></circle>'):format(num(X(p[1])), num(Y(p[2])),
          color, M.escape(s.name), M.escape(numeric and label(p[1]) or p[1]), M.escape(label(p[2]))))
      end
    else
      local bw = band * 0.8 / #o.series
      local base = Y(ylog and ylo or math.max(ylo, math.min(0, yhi)))
      for _, p in ipairs(pts) do
        local x0 = L + band * (at[p[1]] - 1) + band * 0.1 + (i - 1) * bw
        local y = Y(p[2])
        w(('<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="none"><title>%s: %s, %s</title></rect>'):format(num(x0),
          num(math.min(y, base)), num(bw), num(math.abs(base - y)), color, M.escape(s.name), M.escape(tostring(p[1])), M.escape(label(p[2]))))
      end
    end
    w("</g>")
  end
  w('<g class="legend">')
  for i, s in ipairs(o.series) do
    local y = T + 10 + (i - 1) * 20
    s = { name = tostring(s.name or ("series " .. i)) }
    w(('<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s</text>'):format(R + 20, y - 2,
      COLORS[(i - 1) % #COLORS + 1], R + 40, y + 4, M.escape(s.name)))
  end
  w("</g>")
  w("</svg>")
  return table.concat(out, "\n") .. "\n"
end

return M
