-- What the result store (store.lua) answers for a run, and what a run leaves there. Rows are
-- keyed by device | driver, program digest and parameters: a row measured before on this
-- device, driver and program is taken instead of measured again (unless force), and replay
-- answers from the latest stored run. After the run, what was measured now is kept, and the
-- run's keys become the latest run (what cuasync.sweep.best ranks).
local device = require("cuasync.device")
local compiler = require("cuasync.compiler")
local store = require("cuasync.tools.sweep.store")
local row = require("cuasync.tools.sweep.row")

local M = {}
local Memo = {}
Memo.__index = Memo

-- The store of S, opened for a run. gpu: a usable GPU here (a host sweep's rows are "host").
-- R.store gets { damaged, old, path }; a store that cannot be used is R.store.problem.
function M.open(S, R, gpu, replay)
  local st = store.load(S.name)
  R.store = { damaged = st.damaged, old = st.old, path = st.path, problem = st.problem }
  local m = setmetatable({ st = st, name = S.name, order = S.order, device_key = S.host and "host" or "none" }, Memo)
  if gpu and not S.host then
    local dev = device.open(0)
    m.device_key, R.device_name = store.device_key(dev), dev.name
  elseif replay and not S.host then   -- no GPU here: replay the latest run stored for any device
    local at = -1
    for k, run in pairs(st.runs) do
      if k ~= "host" and type(run) == "table" and (run.at or 0) > at then m.device_key, at = k, run.at or 0 end
    end
  end
  if replay then m.replayed = m:latest_run() end
  return m
end

-- The rows of the latest stored run on the memo's device, by their params' exact text.
function Memo:latest_run()
  local by, run = {}, self.st.runs[self.device_key]
  for _, k in ipairs(run and type(run.keys) == "table" and run.keys or {}) do
    local e = self.st.entries[k]
    if e and type(e.params) == "table" then by[row.key_text(self.order, e.params)] = e end
  end
  return by
end

-- Each candidate's key (its program's digest: a program that cannot say it gets "-").
function Memo:key(rows)
  for _, r in ipairs(rows) do
    local ok, digest = true, "-"
    if r.prog then ok, digest = pcall(compiler.key, r.prog, r.prog:arch()) end
    r.key = store.key(self.device_key, ok and digest or "-", row.key_text(self.order, r.params))
  end
end

-- A stored entry's figures onto a row: never the row's identity (index, params).
function M.fill(r, e)
  local index, params = r.index, r.params
  for k, v in pairs(e) do r[k] = v end
  r.index, r.params, r.cached, r.sum = index, params, true, nil
end
Memo.fill = M.fill

-- The stored entry of r, if this run may take it instead of measuring.
function Memo:recall(r) return self.st.entries[r.key] end

-- The entry of r in the latest stored run (replay).
function Memo:latest(r) return self.replayed and self.replayed[row.key_text(self.order, r.params)] end

-- Keep the rows measured now; the run's measured rows become the device's latest run. Returns
-- nil or a note (what became of the store).
function Memo:keep(rows, measured_now)
  local keys, fresh = {}, {}
  for _, r in ipairs(measured_now) do
    if r.kind == "measured" and r.key then fresh[r.key] = store.entry(r) end
  end
  for _, r in ipairs(rows) do
    if r.kind == "measured" and r.key and (fresh[r.key] or self.st.entries[r.key]) then keys[#keys + 1] = r.key end
  end
  return store.save(self.name, { entries = fresh, runs = { [self.device_key] = { at = os.time(), keys = keys } } })
end

return M
