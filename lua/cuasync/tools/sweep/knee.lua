-- S:knee{ x = "stages", series = "rows" | { "inflight", "rows" }, memory = probe, gain = 0.02, hold = 0 }:
-- where extra steps along x stop paying. For each series (one value of each series parameter;
-- the others take their best row at each x), the measured knee is the smallest x beyond which
-- no larger x gains `gain` (2%) or more, with the bytes in flight per SM there (the row's
-- `inflight`, from build: stage bytes x stages x resident blocks per SM). With memory (a
-- cuasync.probe.memory result), the predicted knee is the smallest x whose bytes in flight
-- cover Little's law (memory.bytes_per_sm: read bandwidth x latency at full bandwidth) plus one
-- stage of every resident block (the row's `stage_inflight`): a stage is consumed only once
-- all of it has landed, so the stage still landing covers no latency; and `hold` more stages of
-- every block when a consumer keeps a landed stage that long (1: a bulk store drains it before
-- release; 0, the default: consumers read it into registers and release it). Shown beside the
-- measured knee, in steps apart.
local util = require("cuasync.util")
local row = require("cuasync.tools.sweep.row")
local timeline = require("cuasync.model.timeline")

local M = {}
local K = {}
K.__index = K

local function kib(b) return b and ("%.1f KiB"):format(b / 1024) or "? KiB" end

function M.find(S, o)
  local where = "sweep.knee"
  util.kind(where, "argument", o, "table")
  util.known_fields(where, o, { x = true, series = true, memory = true, gain = true, hold = true })
  local known = {}
  for _, k in ipairs(S.order) do known[k] = true end
  if not known[o.x] then util.fail(where, ("x = %s is not a parameter of the sweep (%s)"):format(util.describe(o.x), table.concat(S.order, ", "))) end
  local series = type(o.series) == "string" and { o.series } or o.series or {}
  util.list(where, "series", series)
  for _, s in ipairs(series) do
    if not known[s] or s == o.x then util.fail(where, ("series names %s, which is not a parameter other than x"):format(util.describe(s))) end
  end
  local gain = o.gain or 0.02
  if type(gain) ~= "number" or gain <= 0 or gain >= 1 then util.fail(where, ("gain must be a number in (0, 1) (got %s)"):format(util.describe(gain))) end
  local hold = o.hold or 0
  if type(hold) ~= "number" or hold ~= hold or hold < 0 or hold == math.huge then
    util.fail(where, ("hold must be a finite number of stages >= 0 (got %s)"):format(util.describe(hold)))
  end
  local need = o.memory and o.memory.bytes_per_sm
  if o.memory ~= nil and type(need) ~= "number" then util.fail(where, "memory must be a cuasync.probe.memory() result (it has no bytes_per_sm)") end

  -- the best row of each series at each x
  local groups, names = {}, {}
  for _, r in ipairs(S.rows) do
    if row.ok(r) then
      local label = {}
      for _, s in ipairs(series) do label[#label + 1] = s .. "=" .. row.fmt_value(r.params[s]) end
      label = #label > 0 and table.concat(label, " ") or "all"
      if not groups[label] then groups[label] = {}; names[#names + 1] = label end
      local xv = r.params[o.x]
      local g = groups[label][xv]
      if not g or row.figure(r) > row.figure(g) then groups[label][xv] = r end
    end
  end
  local xs = S.params and S.params[o.x]
  local out = setmetatable({ x = o.x, gain = gain, need = need, hold = hold, memory = o.memory, series = {} }, K)
  for _, label in ipairs(names) do
    local pts = {}
    for _, xv in ipairs(xs or {}) do
      local r = groups[label][xv]
      if r then pts[#pts + 1] = { x = xv, figure = row.figure(r), inflight = r.inflight, stage = r.stage_inflight,
                                  stall_full = r.stall_full } end
      if r and r.stage_inflight then out.staged = true end
    end
    if #pts > 0 then
      local at
      for i = 1, #pts do
        local more = false
        for j = i + 1, #pts do if pts[j].figure >= pts[i].figure * (1 + gain) then more = true end end
        if not more then at = i break end
      end
      local s = { name = label, points = pts, knee = pts[at].x, knee_index = at, inflight = pts[at].inflight,
                  reached = at < #pts or #pts == 1 }
      if need then
        for i, p in ipairs(pts) do
          p.need = need + (1 + hold) * (p.stage or 0)
          if p.inflight and p.inflight >= p.need then s.predicted, s.predicted_index = p.x, i break end
        end
        s.off = s.predicted_index and math.abs(s.predicted_index - at) or nil
      end
      -- where the rows were traced (S:run{ trace = "all" }): the x from which consumers stop
      -- waiting on full (model/timeline.lua's knee_stage)
      local traced = {}
      for _, p in ipairs(pts) do if p.stall_full then traced[#traced + 1] = { stages = p.x, consumer_full = p.stall_full } end end
      local whole = true
      for _, p in ipairs(pts) do if type(p.x) ~= "number" or p.x ~= math.floor(p.x) or p.x < 1 then whole = false end end
      -- a knee from the timelines needs at least two traced points of the series, at whole counts
      if #traced >= 2 and whole then
        s.timeline = timeline.knee_stage(traced)
        for i, p in ipairs(pts) do if p.x == s.timeline then s.timeline_off = math.abs(i - at) end end
      end
      out.series[#out.series + 1] = s
    end
  end
  return out
end

-- The knee as lines of text: one per series, and how close the prediction lands.
function K:text()
  local lines = {}
  local head = ("knee along %s (the smallest %s beyond which no step gains %g%% or more)"):format(self.x, self.x, self.gain * 100)
  if self.memory then
    local m = self.memory
    head = head .. (("; Little's law: %.0f GB/s read (half of DtoD) x %.0f ns latency at full bandwidth%s / %d SMs = %s in flight per SM%s"):format(
      m.dtod_gbps / 2, m.latency_ns, m.idle_ns and (" (%.0f ns idle)"):format(m.idle_ns) or "", m.sms, kib(self.need),
      not self.staged and "" or self.hold == 0 and ", plus one stage of every resident block"
        or (", plus %g stages (one landing, %g held) of every resident block"):format(1 + self.hold, self.hold)))
  end
  lines[1] = head
  local hits, n, t_hits, t_n = 0, 0, 0, 0
  for _, s in ipairs(self.series) do
    local l = ("  %s: measured %s=%s%s, %s in flight per SM"):format(s.name, self.x, row.fmt_value(s.knee),
      s.reached and "" or " (still gaining at the last step)", kib(s.inflight))
    if self.need then
      n = n + 1
      if s.predicted then
        local p = s.points[s.predicted_index]
        l = l .. ("; predicted %s=%s (%s of %s needed), %d step%s off"):format(self.x, row.fmt_value(s.predicted),
          kib(p.inflight), kib(p.need), s.off, s.off == 1 and "" or "s")
        if s.off <= 1 then hits = hits + 1 end
      else
        l = l .. "; predicted beyond the last point (no point has that much in flight)"
      end
    end
    if s.timeline ~= nil then
      l = l .. ("; the timeline: consumers stop waiting on full at %s=%s, %d step%s off"):format(self.x,
        row.fmt_value(s.timeline), s.timeline_off, s.timeline_off == 1 and "" or "s")
      t_n = t_n + 1
      if s.timeline_off <= 1 then t_hits = t_hits + 1 end
    end
    lines[#lines + 1] = l
  end
  if self.need then lines[#lines + 1] = ("knee predicted within one step in %d of %d series"):format(hits, n) end
  if t_n > 0 then lines[#lines + 1] = ("the timeline's knee within one step in %d of %d traced series"):format(t_hits, t_n) end
  return table.concat(lines, "\n")
end

util.methods(K, "sweep.knee", "K")

return M
