-- The sweep's result store: one JSON file per sweep name in $CUASYNC_CACHE_DIR/sweeps, holding
-- every measured row under its key (device | driver | program digest | parameters), and, per
-- device and driver, the keys of the latest run. A later run takes stored rows instead of
-- measuring them again; cuasync.sweep.best reads the latest run's best verified row.
--   { version = 3, entries = { [key] = row + { sum } }, runs = { [device key] = { at, keys } } }
-- Each entry carries the SHA-256 of its JSON (cache.sha256): an entry whose sum does not
-- match was damaged and is measured again, never trusted. The file is written through the
-- compile cache's atomic writer. Entries of versions 1 and 2 (unsealed) are measured again.
local device = require("cuasync.device")
local util = require("cuasync.util")
local cache = require("cuasync.cache")
local json = require("cuasync.tools.json")
local common = require("cuasync.tools.report.common")

local M = { VERSION = 3 }

function M.path(name)
  return (cache.dir() or ".") .. "/sweeps/" .. name .. ".json"
end

-- The key of this machine's rows: "<device name>|<driver version>", "host" for a host sweep.
function M.device_key(dev)
  return dev.name .. "|" .. tostring(device.driver_version())
end

-- A row's key in the store: device | driver, program digest, parameters.
function M.key(device_key, digest, params_text)
  return device_key .. "|" .. digest .. "|" .. params_text
end

-- An entry's checksum: the SHA-256 of its JSON without the sum (tools/json.lua writes keys
-- sorted and numbers exact, so the text read back encodes to the same bytes).
local function checksum(e)
  local copy = {}
  for k, v in pairs(e) do if k ~= "sum" then copy[k] = v end end
  return cache.sha256(json.encode(copy))
end

function M.seal(row)
  local e = {}
  for k, v in pairs(row) do e[k] = v end
  e.sum = checksum(e)
  return e
end

local function intact(e)
  return type(e) == "table" and type(e.sum) == "string" and e.sum == checksum(e)
end

-- The store of sweep `name`: { entries, runs, damaged = n (entries dropped) }; empty when there is
-- none. Anything there that is not a store raises (where names the caller), so no run
-- overwrites it unread.
function M.load(where, name)
  local path = M.path(name)
  local empty = { entries = {}, runs = {}, damaged = 0, path = path }
  local kind = cache.file_kind(path)
  if kind == "missing" then return empty end
  if kind ~= "file" then
    util.fail(where, ("the result store %s is not a file (remove it, or set CUASYNC_CACHE_DIR elsewhere)"):format(path))
  end
  if not pcall(json.lib) then return empty end
  local doc, why = json.decode_file(path)
  if type(doc) ~= "table" or (doc.version ~= nil and type(doc.version) ~= "number") then
    util.fail(where, ("the result store %s is not JSON of a sweep (%s; remove it to start over)"):format(path,
      why or ("a JSON " .. type(doc))))
  end
  if doc.version == nil and #doc > 0 then   -- a list: no store ever was one
    util.fail(where, ("the result store %s is not a version %d store (a JSON list; remove it to start over)"):format(path, M.VERSION))
  end
  if doc.version == nil or doc.version < M.VERSION then
    local n = 0
    for _ in pairs(doc.version and (doc.entries or {}) or doc) do n = n + 1 end
    empty.damaged, empty.old = n, true
    return empty
  end
  if doc.version > M.VERSION or type(doc.entries) ~= "table" or type(doc.runs) ~= "table" then
    util.fail(where, ("the result store %s is not a version %d store (version %s; remove it to start over)"):format(
      path, M.VERSION, util.describe(doc.version)))
  end
  local s = { entries = {}, runs = doc.runs, damaged = 0, path = path }
  for k, e in pairs(doc.entries) do
    if intact(e) then s.entries[k] = e else s.damaged = s.damaged + 1 end
  end
  return s
end

-- Write the store. Quietly nothing with CUASYNC_CACHE=0 or without dkjson (load could not read
-- the store, so writing would drop it unread; the sweep then measures every time)
-- measures every time); a write that fails says so once on stderr (the rows are in S.rows).
local warned = false
function M.save(name, s)
  if os.getenv("CUASYNC_CACHE") == "0" or not pcall(json.lib) then return end
  local ok, why = cache.write_atomic(M.path(name), json.encode({ version = M.VERSION, entries = s.entries, runs = s.runs }))
  if not ok and not warned then
    warned = true
    io.stderr:write("cuasync.sweep: the result store ", M.path(name), " was not written: ", tostring(why), "\n")
  end
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
  local key = "host"
  if dev == nil and device.available() then dev = device.current() end
  if dev ~= nil then key = M.device_key(dev) end
  local store = M.load("sweep.best", name)
  local run = store.runs[key]
  if not run or type(run.keys) ~= "table" then
    if next(store.entries) == nil then
      return nil, ("no stored results for sweep '%s' (none in %s: run the sweep first)"):format(name, M.path(name))
    end
    return nil, ("no run of sweep '%s' stored for %s (its rows in %s are of other devices or drivers: run it again here)"):format(
      name, key, M.path(name))
  end
  local best, unverified
  for _, k in ipairs(run.keys) do
    local e = store.entries[k]
    if type(e) == "table" and e.kind == "measured" and type(e.params) == "table" and common.figure(e) then
      if e.verified == false then
        unverified = (unverified or 0) + 1
      elseif not best or common.figure(e) > common.figure(best) then
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
  row.params, row.stored_at, row.sum = params, run.at, nil
  return params, row
end

return M
