-- Tile schedulers as Lua objects: which tiles and k-ranges each CTA of a persistent grid does,
-- the turnstile that orders a tile's partial sums, and the device walk as a generated header.
--   local sched = cuasync.scheduler{ kind = "stream_k", m = 4096, n = 4096, k = 4096, tile = { 128, 256 },
--                                bk = 64, raster = 8, sms = 132 }
--   sched.ctas .tiles .k_tiles .flag_bytes .workspace_bytes, sched:units(c) sched:balance() sched:verify()
--   sched:explain() sched:header() sched:headers() sched:defines() sched:program{...} sched:launch_config{...}
--   sched:next_epoch() sched:simulate{...} sched:mutate{...}
-- kind = "persistent" | "stream_k" | "split_k" (with splits = n, mode = "serial" | "reduce").
-- The arithmetic lives in model/tile_scheduler.lua, the handshakes in
-- model/tile_scheduler_protocol.lua, the header in model/tile_scheduler_header.lua.
local util = require("cuasync.util")
local device = require("cuasync.device")
local program = require("cuasync.program")
local cxx = require("cuasync.model.cxx_names")
local T = require("cuasync.model.tile_scheduler")
local protocol = require("cuasync.model.tile_scheduler_protocol")
local header = require("cuasync.model.tile_scheduler_header")

local M = {}
local Scheduler = {}
Scheduler.__index = Scheduler

-- The fields cuasync.scheduler{...} takes (the one list; docs_spec holds the reference to it).
M.FIELDS = { name = true, kind = true, m = true, n = true, k = true, tile = true, bk = true, raster = true,
             splits = true, mode = true, sms = true }
M.MAX_WORK = 2000000   -- units x runs of one simulate call

local function fail(msg) util.fail("scheduler", msg) end

-- The SM count, and the device's where sms was a count and a GPU is found (else nil).
local function sms_of(v)
  if v == nil then
    if not device.available() then
      fail("sms is required where no GPU is found (the SM count, e.g. 132, or a cuasync device)")
    end
    v = device.current()
  end
  if type(v) == "table" then
    if not util.is_integer(v.sms) then fail(("sms must be a count or a device with .sms (got %s)"):format(util.describe(v))) end
    v = v.sms
  elseif device.available() then
    return util.int_in("scheduler", "sms", v, 1, 4096), device.current()
  end
  return util.int_in("scheduler", "sms", v, 1, 4096)
end

function M.new(spec)
  util.kind("scheduler", "argument", spec, "table")
  util.known_fields("scheduler", spec, M.FIELDS)
  local name = spec.name or "sched"
  util.kind("scheduler", "name", name, "string")
  if not name:match("^[%a_][%w_]*$") or #name > 64 or cxx.refusal(name) then
    fail(("name must be a C identifier of at most 64 characters, not a C++ keyword (it names the generated struct; got %s)"):format(
      util.describe(name)))
  end
  local kind = spec.kind
  if type(kind) ~= "string" or not T.KINDS[kind] then
    fail(('kind must be "persistent", "stream_k" or "split_k" (got %s)'):format(util.describe(kind)))
  end
  local m = util.int_in("scheduler", "m", spec.m, 1, 2 ^ 31 - 1)
  local n = util.int_in("scheduler", "n", spec.n, 1, 2 ^ 31 - 1)
  local k = util.int_in("scheduler", "k", spec.k, 1, 2 ^ 31 - 1)
  util.list("scheduler", "tile", spec.tile)
  if #spec.tile ~= 2 then fail(("tile must be { bm, bn } (got %d %s)"):format(#spec.tile, #spec.tile == 1 and "entry" or "entries")) end
  local bm = util.int_in("scheduler", "tile[1] (bm)", spec.tile[1], 1, 4096)
  local bn = util.int_in("scheduler", "tile[2] (bn)", spec.tile[2], 1, 4096)
  local bk = util.int_in("scheduler", "bk", spec.bk, 1, 2 ^ 20)
  local raster = util.int_in("scheduler", "raster", spec.raster or 1, 0, 2 ^ 31 - 1)
  local splits, mode = 1, nil
  if kind == "split_k" then
    splits = util.int_in("scheduler", "splits", spec.splits, 2, 2 ^ 20)
    mode = spec.mode or "serial"
    if type(mode) ~= "string" or not T.MODES[mode] then
      fail(('mode must be "serial" or "reduce" (got %s)'):format(util.describe(mode)))
    end
  else
    if spec.splits ~= nil then fail(('splits is for kind = "split_k" (kind is "%s")'):format(kind)) end
    if spec.mode ~= nil then fail(('mode is for kind = "split_k" (kind is "%s")'):format(kind)) end
  end
  local sms, dev = sms_of(spec.sms)
  local s = T.derive{ kind = kind, m = m, n = n, k = k, bm = bm, bn = bn, bk = bk, raster = raster, splits = splits,
                      mode = mode, sms = sms }
  local why = T.refusal(s)
  if why then fail(why) end
  -- more CTAs than the device has SMs, with turnstile waits: said once (a plan for another device is fine)
  local over = dev and T.dispatch_note(s, dev.sms, dev.name)
  if over then util.note("cuasync.scheduler: " .. over) end
  s.name = name
  -- s.turnstile, s.slots, s.flag_count, s.flag_bytes, s.workspace_bytes: model/tile_scheduler.derive
  -- (one flag and one f32 partial a split tile: stream-K's sk_tiles, serial split-K's every tile)
  return setmetatable(s, Scheduler)
end

-- CTA c's units in the order it does them (0 <= c < sched.ctas): { tile, row, col, k_begin, k_end,
-- split, wait, publish, epilogue }, k in k-tiles.
function Scheduler:units(c)
  util.int_in("scheduler.units", "c", c, 0, self.ctas - 1)
  return T.units(self, c)
end

function Scheduler:balance() return T.balance(self) end

-- Every invariant of the walk (each (tile, k-iteration) once, the turnstile's order, one epilogue
-- a tile, no cycle of waits); raises naming the first broken one, else returns the scheduler.
function Scheduler:verify()
  local bad = T.violations(self)
  if #bad > 0 then fail(("scheduler '%s' breaks %d invariant%s: %s"):format(self.name, #bad, #bad == 1 and "" or "s", bad[1])) end
  return self
end

function Scheduler:explain()
  local b = self:balance()
  local lines = {
    ("scheduler '%s': %s%s, %d x %d x %d in tiles of %d x %d x %d"):format(self.name, self.kind,
      self.mode and (" (%d splits, %s)"):format(self.splits, self.mode) or "", self.m, self.n, self.k, self.bm, self.bn, self.bk),
    ("  %d tiles (%d x %d, raster bands of %d), %d k-tiles each, on %d CTAs of %d SMs%s"):format(self.tiles,
      self.tiles_m, self.tiles_n, self.raster, self.k_tiles, self.ctas, self.sms,
      self.cluster > 1 and (" in clusters of %d"):format(self.cluster) or ""),
    ("  k-iterations per CTA: max %d, min %d, mean %.1f; SMs busy %.1f%% of the longest CTA's time"):format(b.max, b.min,
      b.mean, 100 * b.efficiency),
  }
  if self.kind == "stream_k" then
    lines[#lines + 1] = ("  %d tiles whole, the last %d cut into %d k-iterations"):format(self.dp_tiles, self.sk_tiles, self.sk_iters)
  end
  if b.publishes > 0 then
    lines[#lines + 1] = ("  %d tiles split: %d partials published, %d waits%s"):format(b.split_tiles, b.publishes, b.waits,
      self.turnstile and (" (turnstile: %d flag bytes, %d workspace bytes)"):format(self.flag_bytes, self.workspace_bytes) or " (through DSMEM)")
  end
  return table.concat(lines, "\n")
end

function Scheduler:header() return header.header(self) end
function Scheduler:defines() return header.defines(self) end
function Scheduler:headers() return { [("cuasync/schedulers/%s.cuh"):format(self.name)] = self:header() } end
function Scheduler:__tostring()
  return ("cuasync.scheduler '%s': %s, %d tiles x %d k-tiles on %d CTAs%s"):format(self.name, self.kind, self.tiles,
    self.k_tiles, self.ctas, self.mutation and " (mutated)" or "")
end

-- sched:program{ source = s | file = f, ... }: a cuasync.program with the Config header bound as
-- <cuasync/schedulers/NAME.cuh> and the defines added; watched unless told otherwise.
function Scheduler:program(spec)
  if self.mutation then fail(("scheduler '%s' is a mutated one: it is for :simulate only"):format(self.name)) end
  util.kind("scheduler.program", "argument", spec, "table")
  util.null_fields("scheduler.program", spec)
  local s = program.bound("scheduler.program", spec, { { who = "the scheduler", headers = self:headers(), defines = self:defines() } })
  local sched = self
  return program.new(s, { check_config = function(kernel_name, c) M.config_check(sched, kernel_name, c) end })
end

-- The launch a kernel of sched:program must have where the walk's handshakes were derived for the
-- grid (a turnstile: every wait on a lower-index CTA of sched.ctas; reduce: a cluster of the
-- splits). A persistent walk covers every tile on any grid.
function M.config_check(s, kernel_name, c)
  if not s.turnstile and s.mode ~= "reduce" then return end
  local blocks = c.grid[1] * c.grid[2] * c.grid[3]
  if blocks ~= s.ctas then
    util.fail("launch", ("kernel '%s' launches %d blocks but scheduler '%s' (%s) derived its walk and its waits for %d (use sched:launch_config)"):format(
      kernel_name, blocks, s.name, s.kind, s.ctas))
  end
  if s.mode == "reduce" then
    local size = c.cluster and c.cluster[1] * c.cluster[2] * c.cluster[3] or 1
    if size ~= s.cluster then
      util.fail("launch", ("kernel '%s' launches clusters of %d blocks but scheduler '%s' reduces %d splits in a cluster (use sched:launch_config)"):format(
        kernel_name, size, s.name, s.cluster))
    end
  end
end

-- A launch config's dims as x, y, z (a number is { n, 1, 1 }), or nil where it is not one.
local function dims(v)
  if util.is_integer(v) then return v, 1, 1 end
  if type(v) == "table" then return v[1], v[2] or 1, v[3] or 1 end
end

-- sched:launch_config{ block = ..., smem = ..., stream = ... }: grid (and the reduce mode's cluster)
-- filled from the scheduler. A grid or cluster already there (a pipeline plan's P:launch_config{
-- grid = sched.ctas }, stacked inside) is kept where it is the scheduler's, else refused.
function Scheduler:launch_config(cfg)
  util.kind("scheduler.launch_config", "argument", cfg, "table")
  local want = { grid = { self.ctas, 1, 1 }, cluster = self.cluster > 1 and { self.cluster, 1, 1 } or nil }
  local out = {}
  for key, v in pairs(cfg) do
    if key == "grid" or key == "cluster" then
      local w = want[key] or { 1, 1, 1 }
      local x, y, z = dims(v)
      if x ~= w[1] or y ~= w[2] or z ~= w[3] then
        local shown = x and ("{ %s, %s, %s }"):format(tostring(x), tostring(y), tostring(z)) or util.describe(v)
        util.fail("scheduler.launch_config", ("%s = %s is not the scheduler's (%s): leave %s out, and the scheduler fills it"):format(key,
          util.is_integer(v) and tostring(v) or shown, key == "grid" and ("{ %d, 1, 1 }: sched.ctas"):format(self.ctas)
            or self.cluster > 1 and ("{ %d, 1, 1 }: the reduce mode's splits"):format(self.cluster) or "no cluster", key))
      end
    end
    out[key] = v
  end
  out.grid, out.cluster = want.grid, want.cluster
  return out
end

-- sched:next_epoch(): the epoch for the next launch (1..4095, then 1 again), for the kernel to pass
-- to turnstile.cuh: a flag a launch leaves (an aborted one's) carries its epoch, and the next
-- launch waits only for its own. One call per launch.
function Scheduler:next_epoch()
  self.epoch = T.next_epoch(self.epoch)
  return self.epoch
end

-- sched:simulate{ runs = 20, seed = 1 }: the handshakes over random schedules (model/tile_scheduler_protocol).
function Scheduler:simulate(o)
  o = o or {}
  util.kind("scheduler.simulate", "argument", o, "table")
  util.known_fields("scheduler.simulate", o, { runs = true, seed = true })
  local units = 0
  for c = 0, self.ctas - 1 do units = units + #T.units(self, c) end
  local runs = util.int_in("scheduler.simulate", "runs", o.runs or math.max(1, math.min(20, math.floor(M.MAX_WORK / units))), 1, M.MAX_WORK)
  if runs * units > M.MAX_WORK then
    util.fail("scheduler.simulate", ("runs x units = %d x %d exceeds %d per call (fewer runs, or a smaller shape)"):format(runs, units, M.MAX_WORK))
  end
  local r = protocol.run(self, self.mutation, runs, util.int_in("scheduler.simulate", "seed", o.seed or 1, 0, 2 ^ 31))
  r.scheduler = self.name
  return r
end

-- sched:mutate{ skip_signal = c | early_read = c | wait_delta = d | relaxed = true | skip_second_sync = true |
--               after_abort = true | no_epoch = true } (model/tile_scheduler_protocol.lua says what each plants)
function Scheduler:mutate(m)
  util.kind("scheduler.mutate", "argument", m, "table")
  util.known_fields("scheduler.mutate", m, protocol.MUTATIONS)
  if next(m) == nil then
    util.fail("scheduler.mutate", "name a mutation: skip_signal, early_read, wait_delta, relaxed, skip_second_sync, after_abort or no_epoch")
  end
  for _, f in ipairs({ "skip_signal", "early_read" }) do
    if m[f] ~= nil then util.int_in("scheduler.mutate", f, m[f], 0, self.ctas - 1) end
  end
  if m.wait_delta ~= nil then
    util.int_in("scheduler.mutate", "wait_delta", m.wait_delta, -self.k_tiles, self.k_tiles)
    if m.wait_delta == 0 then util.fail("scheduler.mutate", "wait_delta = 0 changes nothing") end
  end
  for _, f in ipairs({ "relaxed", "skip_second_sync", "after_abort", "no_epoch" }) do
    if m[f] ~= nil and m[f] ~= true then util.fail("scheduler.mutate", ("%s must be true (got %s)"):format(f, util.describe(m[f]))) end
  end
  local reduce = self.mode == "reduce"
  if (m.wait_delta ~= nil or m.relaxed or m.after_abort or m.no_epoch) and not self.turnstile then
    util.fail("scheduler.mutate", ("wait_delta, relaxed, after_abort and no_epoch are faults of a turnstile; scheduler '%s' has none (%s)"):format(
      self.name, self.kind))
  end
  if m.skip_second_sync and not reduce then
    util.fail("scheduler.mutate", ('skip_second_sync is a fault of mode = "reduce"; scheduler \'%s\' is %s'):format(self.name, self.mode or self.kind))
  end
  local c = {}
  for key, v in pairs(self) do c[key] = v end
  c.mutation = {}
  for key, v in pairs(self.mutation or {}) do c.mutation[key] = v end
  for key, v in pairs(m) do c.mutation[key] = v end
  return setmetatable(c, Scheduler)
end

M.Scheduler = Scheduler
util.methods(Scheduler, "scheduler", "sched")

return M
