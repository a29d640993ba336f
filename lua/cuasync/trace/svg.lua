-- A timeline (model/timeline.lua) as one self-contained SVG, for a look without any tool: one
-- row per track grouped by block, a time axis in µs, waits coloured by barrier (full, empty,
-- other), ranges as a thinner bar under them, issue / arm / release / mark as ticks, a legend,
-- and each span's and instant's name in a <title> tooltip. The summary's diagnosis heads it.
--   svg.text(T[, { width = 1200, blocks = 16 }]) -> string    (blocks: how many blocks to draw;
--                                                              the Perfetto file holds them all)
--   svg.write(T, path[, opts]) -> path   (raises "cuasync.trace.svg: <why>" where it cannot)
local util = require("cuasync.util")
local timeline = require("cuasync.model.timeline")
local fs = require("cuasync.fs")
local summary = require("cuasync.model.timeline_summary")

local M = {}

local LABEL, RIGHT, TOP, HEAD, ROW, LEGEND = 250, 20, 58, 18, 16, 40
M.COLORS = { full = "#d9534f", empty = "#4a7bd0", other = "#9a9a9a", range = "#3aa35b",
             issue = "#222222", arm = "#e69f00", release = "#8e44ad", mark = "#e67e22" }

local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }
local function esc(s) return (tostring(s):gsub("[&<>\"']", ESC)) end

local function num(x) return ("%.2f"):format(x) end

-- A tick step of 1, 2 or 5 × 10^k µs, giving about eight ticks over d µs.
local function step_of(d)
  if d <= 0 then return 1 end
  local raw = d / 8
  local mag = 10 ^ math.floor(math.log10(raw))
  for _, m in ipairs({ 1, 2, 5, 10 }) do if m * mag >= raw then return m * mag end end
  return 10 * mag
end

local function options(opts)
  local where = "trace.svg"
  opts = opts == nil and {} or opts
  util.kind(where, "options", opts, "table")
  util.known_fields(where, opts, { width = true, blocks = true })
  local width = opts.width == nil and 1200 or util.int_in(where, "width", opts.width, 400, 100000)
  local blocks = opts.blocks == nil and 16 or util.count(where, "blocks", opts.blocks)
  return width, blocks
end

local function check(T) timeline.check(T, "trace.svg") end

local function duration_text(ns) return ("%.3f µs"):format(ns / 1000) end

function M.text(T, opts)
  check(T)
  local width, max_blocks = options(opts)
  local shown = math.min(#T.blocks, max_blocks)
  local rows = 0
  for b = 1, shown do rows = rows + #T.blocks[b].slots end
  local height = TOP + shown * HEAD + rows * ROW + LEGEND + (shown < #T.blocks and 16 or 0)
  local plot = width - LABEL - RIGHT
  local d = math.max(T.duration or 0, 1)
  local function x(t) return LABEL + t * plot / d end
  local out = {}
  local function add(s) out[#out + 1] = s end
  add('<?xml version="1.0" encoding="UTF-8"?>')
  add(('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="11">')
      :format(width, height, width, height))
  add(('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>'):format(width, height))
  local S = summary.summary(T)
  add(('<text x="8" y="16" font-size="13" font-weight="bold">%s</text>'):format(
    esc(("%s · %s · %d warps"):format(tostring(T.kernel or "kernel"), duration_text(T.duration or 0), #T.tracks))))
  add(('<text x="8" y="32">%s</text>'):format(esc(S.diagnosis)))
  -- the time axis: ticks in µs over the plot, with a light grid line down the rows
  local bottom = TOP + shown * HEAD + rows * ROW
  local step = step_of(d / 1000)
  local k = 0
  while k * step <= d / 1000 + 1e-9 do
    local px = x(k * step * 1000)
    add(('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e4e4e4"/>'):format(num(px), TOP - 6, num(px), bottom))
    add(('<text x="%s" y="%d" text-anchor="middle" fill="#555555">%s</text>'):format(num(px), TOP - 10, esc(("%g µs"):format(k * step))))
    k = k + 1
  end
  local y = TOP
  local row_of = {}
  for b = 1, shown do
    local B = T.blocks[b]
    add(('<text x="8" y="%d" font-weight="bold">%s</text>'):format(y + 13,
        esc(("block %s (SM %s)"):format(tostring(B.linear), tostring(B.sm)))))
    y = y + HEAD
    for i, ti in ipairs(B.slots) do
      row_of[ti] = y
      if i % 2 == 0 then add(('<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f6f6" stroke="none"/>'):format(LABEL, y, plot, ROW)) end
      add(('<text x="16" y="%d">%s</text>'):format(y + 12, esc(T.tracks[ti].name)))
      y = y + ROW
    end
  end
  -- waits fill the row but its foot, where ranges run; an open wait is dashed
  for _, s in ipairs(T.spans) do
    local ry = row_of[s.track]
    if ry then
      local x0, w = x(s.t0), math.max(x(s.t1) - x(s.t0), 0.5)
      local tip = esc(("%s · %s%s"):format(s.name, duration_text(s.t1 - s.t0), s.open and " (open: no end recorded)" or ""))
      if s.kind == "wait" then
        local color = M.COLORS[s.barrier] or M.COLORS.other
        add(('<rect x="%s" y="%d" width="%s" height="%d" fill="%s"%s><title>%s</title></rect>'):format(num(x0), ry + 2, num(w),
            ROW - 7, color, s.open and ' stroke="#000000" stroke-dasharray="2,2"' or "", tip))
      else
        add(('<rect x="%s" y="%d" width="%s" height="3" fill="%s"><title>%s</title></rect>'):format(num(x0), ry + ROW - 4, num(w),
            M.COLORS.range, tip))
      end
    end
  end
  for _, e in ipairs(T.instants) do
    local ry = row_of[e.track]
    if ry then
      local px = num(x(e.t))
      add(('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="1"><title>%s</title></line>'):format(px, ry,
          px, ry + ROW - 1, M.COLORS[e.kind] or M.COLORS.other, esc(e.name)))
    end
  end
  if shown < #T.blocks then
    add(('<text x="8" y="%d" fill="#555555">%s</text>'):format(bottom + 13,
        esc(("showing %d of %d blocks (svg.text's blocks option); the Perfetto file holds them all"):format(shown, #T.blocks))))
    bottom = bottom + 16
  end
  -- the legend
  local lx, ly = 8, bottom + 16
  local items = { { "full wait", M.COLORS.full }, { "empty wait", M.COLORS.empty }, { "other wait", M.COLORS.other },
                  { "range", M.COLORS.range, true }, { "issue", M.COLORS.issue, "tick" }, { "arm", M.COLORS.arm, "tick" },
                  { "release", M.COLORS.release, "tick" }, { "mark", M.COLORS.mark, "tick" } }
  for _, it in ipairs(items) do
    if it[3] == "tick" then
      add(('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>'):format(lx + 5, ly - 9, lx + 5, ly + 2, it[2]))
    else
      add(('<rect x="%d" y="%d" width="12" height="%d" fill="%s"/>'):format(lx, it[3] and ly - 2 or ly - 9, it[3] and 3 or 10, it[2]))
    end
    add(('<text x="%d" y="%d">%s</text>'):format(lx + 16, ly, esc(it[1])))
    lx = lx + 30 + 7 * #it[1]
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

function M.write(T, path, opts)
  util.cstring("trace.svg", "path", path)
  local ok, why = fs.write(path, M.text(T, opts))
  if not ok then util.fail("trace.svg", why) end
  return path
end

return M
