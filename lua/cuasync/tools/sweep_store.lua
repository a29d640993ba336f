-- The sweep's result store: one JSON file per sweep name in $CUASYNC_CACHE_DIR/sweeps, holding
-- every measured row under its key (device | driver | program digest | parameters), and, per
-- device and driver, the keys of the latest run. A later run takes stored rows instead of
-- measuring them again; cuasync.sweep.best reads the latest run's best verified row, so that an
-- orchestration script launches the variant its sweep chose.
--   { version = 2, entries = { [key] = row }, runs = { [device key] = { at, keys = {...} } } }
-- (version 1 was the entries table alone: it is read as entries without runs.)
local device = require("cuasync.device")
local util = require("cuasync.util")
local cache = require("cuasync.cache")
local report = require("cuasync.tools.report")
local toolkit = require("cuasync.toolkit")
local shell_quote = require("cuasync.tools.isolate").shell_quote

local M = {}

function M.path(name)
  return cache.dir() .. "/sweeps/" .. name .. ".json"
end

-- The key of this machine's rows: "<device name>|<driver version>", "host" for a host sweep.
function M.device_key(dev)
  return dev.name .. "|" .. tostring(device.driver_version())
end

-- The store of sweep `name`: { entries, runs }; empty when there is none. A file that is not a
-- store raises (where names the caller), so no run overwrites it unread.
function M.load(where, name)
  local path = M.path(name)
  local text = toolkit.read_file(path)
  if not text then return { entries = {}, runs = {} } end
  local ok, dkjson = pcall(require, "dkjson")
  if not ok then return { entries = {}, runs = {} } end
  local doc = dkjson.decode(text)
  if type(doc) ~= "table" then
    util.fail(where, ("the result store %s is not JSON of a sweep (remove it to start over)"):format(path))
  end
  if doc.version == 2 then
    return { entries = type(doc.entries) == "table" and doc.entries or {}, runs = type(doc.runs) == "table" and doc.runs or {} }
  end
  return { entries = doc, runs = {} }
end

-- Write the store atomically (a temporary file, then a rename). Quietly nothing without dkjson
-- or with CUASYNC_CACHE=0 (the sweep then measures every time).
function M.save(name, store)
  local ok, dkjson = pcall(require, "dkjson")
  if not ok or os.getenv("CUASYNC_CACHE") == "0" then return end
  os.execute("mkdir -p " .. shell_quote(cache.dir() .. "/sweeps"))
  local path = M.path(name)
  local tmp = path .. ".tmp"
  local f = io.open(tmp, "w")
  if not f then return end
  f:write(dkjson.encode({ version = 2, entries = store.entries, runs = store.runs }))
  f:close()
  os.rename(tmp, path)
end

-- cuasync.sweep.best(name[, { device = dev }]) -> params, row | nil, why: the best verified
-- measured row of the latest run of sweep `name` on this device and driver (without a device
-- given: the current GPU, or the host rows of a host = true sweep where there is no GPU).
function M.best(name, opts)
  util.cstring("sweep.best", "name", name)
  if name:find("[/%z]") or name == "" or name:sub(1, 1) == "." then
    util.fail("sweep.best", ("name %s is not a sweep name (no '/', not empty, not starting with '.')"):format(util.describe(name)))
  end
  if opts ~= nil then
    util.kind("sweep.best", "opts", opts, "table")
    util.known_fields("sweep.best", opts, { device = true })
  end
  local dev = opts and opts.device
  if dev ~= nil and (type(dev) ~= "table" or type(dev.name) ~= "string" or dev.ordinal == nil) then
    util.fail("sweep.best", ("opts.device must be a cuasync.device() (got %s)"):format(util.describe(dev)))
  end
  -- no device given: the current GPU's rows, or without a GPU a host sweep's (host = true)
  local key = "host"
  if dev == nil and device.available() then dev = device.current() end
  if dev ~= nil then key = M.device_key(dev) end
  local store = M.load("sweep.best", name)
  local run = store.runs[key]
  if not run or type(run.keys) ~= "table" then
    if next(store.entries) == nil then
      return nil, ("no stored results for sweep '%s' (none in %s: run the sweep first)"):format(name, M.path(name))
    end
    return nil, ("no run of sweep '%s' stored for %s (its rows in %s are of other devices or drivers, or of a run before runs were recorded: run it again here)"):format(
      name, key, M.path(name))
  end
  local best, unverified
  for _, k in ipairs(run.keys) do
    local e = store.entries[k]
    if type(e) == "table" and e.kind == "measured" and type(e.params) == "table" and report.figure(e) then
      if e.verified == false then
        unverified = (unverified or 0) + 1
      elseif not best or report.figure(e) > report.figure(best) then
        best = e
      end
    end
  end
  if not best then
    return nil, ("the latest run of sweep '%s' on %s has no verified measured row (%d measured%s; its other rows failed, were pruned or skipped: S:print() shows why)"):format(
      name, key, #run.keys, unverified and (", " .. unverified .. " of them unverified") or "")
  end
  local params, row = {}, {}
  for k, v in pairs(best.params) do params[k] = v end
  for k, v in pairs(best) do row[k] = v end
  row.params, row.stored_at = params, run.at
  return params, row
end

return M
