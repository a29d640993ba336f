-- The sweep's result store: one JSON file per sweep name in $CUASYNC_CACHE_DIR/sweeps, holding
-- every measured row under its key (device | driver | program digest | parameters exactly, in
-- row.key_text: two values that print alike are two keys), and, per
-- device and driver, the keys of the latest run. A later run takes stored rows instead of
-- measuring them again; cuasync.sweep.best reads the latest run's best verified row.
--   { version = 3, entries = { [key] = row + { sum } }, runs = { [device key] = { at, keys } } }
-- Each entry is sealed (fs.seal: the SHA-256 of its JSON in `sum`): an entry whose sum does not
-- match, or that is not a measured row the sweep would make (row.check), was damaged and is
-- measured again, never trusted. The file is written atomically (fs.write_atomic), under a lock,
-- merged with what concurrent runs wrote. Entries of versions 1 and 2 (unsealed) are measured
-- again; so are entries stored under the keys of before (parameters as the reports print them,
-- %.6g): no key of now matches them, and they stay until the file is removed.
local device = require("cuasync.device")
local util = require("cuasync.util")
local cache = require("cuasync.cache")
local fs = require("cuasync.fs")
local json = require("cuasync.tools.json")
local row = require("cuasync.tools.sweep.row")

local M = { VERSION = 3 }

-- The rule of a sweep's name, for the sweep that takes it and for sweep.best that reads its
-- results: letters, digits, '_', '.' or '-', neither "." nor ".." (the name is a file here and
-- a directory under cuasync-slurm/).
function M.check_name(where, name)
  util.cstring(where, "name", name)
  if not name:match("^[%w_%.%-]+$") or name == "." or name == ".." then
    util.fail(where, ("name %s is not a sweep name: letters, digits, '_', '.' or '-', and not \".\" or \"..\" (it names result files)"):format(
      util.describe(name)))
  end
  return name
end

function M.path(name)
  return (cache.dir() or ".") .. "/sweeps/" .. name .. ".json"
end

-- The key of this machine's rows: "<device name>|<driver version>", "host" for a host sweep.
function M.device_key(dev)
  return dev.name .. "|" .. tostring(device.driver_version())
end

-- A row's key in the store: device | driver, program digest, parameters (row.key_text).
function M.key(device_key, digest, key_text)
  return device_key .. "|" .. digest .. "|" .. key_text
end

-- A row sealed as a store entry (fs.seal: the checksum every sealed file of cuasync carries).
M.seal = fs.seal

-- The store entry of a measured row: its figures and params, sealed.
function M.entry(r)
  return M.seal(row.pick(r, "store"))
end

-- An entry is trusted only when its sum matches and it is what the sweep writes: a measured row
-- whose every value keeps the row's rules (row.check; a sealed entry of anything else came from
-- elsewhere).
local function trusted(e)
  return fs.sealed(e) and row.check(e, nil, true) == nil
end

-- Read the store file: { entries, runs, damaged, old } or nil and why it is not a store.
local function read(path)
  local doc, why = json.decode_file(path)
  if type(doc) ~= "table" or (doc.version ~= nil and type(doc.version) ~= "number") then
    return nil, ("not JSON of a sweep's store (%s)"):format(why or ("a JSON " .. type(doc)))
  end
  if doc.version == nil and #doc > 0 then return nil, "a JSON list, not a store" end
  if doc.version == nil or doc.version < M.VERSION then   -- unsealed entries of versions 1 and 2
    local n = 0
    for _ in pairs(doc.version and (type(doc.entries) == "table" and doc.entries or {}) or doc) do n = n + 1 end
    return { entries = {}, runs = {}, damaged = n, old = true }
  end
  if doc.version > M.VERSION or type(doc.entries) ~= "table" or type(doc.runs) ~= "table" then
    return nil, ("not a version %d store (version %s)"):format(M.VERSION, util.describe(doc.version))
  end
  local s = { entries = {}, runs = {}, damaged = 0 }
  for k, e in pairs(doc.entries) do
    if type(k) == "string" and trusted(e) then s.entries[k] = e else s.damaged = s.damaged + 1 end
  end
  for k, run in pairs(doc.runs) do
    if type(k) == "string" and type(run) == "table" and type(run.keys) == "table" then s.runs[k] = run end
  end
  return s
end

-- The store of sweep `name`: { entries, runs, damaged = n (entries not trusted), path,
-- problem = why it cannot be used (then it is empty, and a sweep says so and measures) }.
function M.load(name)
  local path = M.path(name)
  local empty = { entries = {}, runs = {}, damaged = 0, path = path }
  if os.getenv("CUASYNC_CACHE") == "0" then return empty end
  if not pcall(json.lib) then
    empty.problem = "dkjson is missing (apt-get install lua-dkjson): results are not kept between runs"
    return empty
  end
  local kind = fs.kind(path)
  if kind == "missing" then return empty end
  if kind ~= "file" then
    empty.problem = ("the result store %s is not a file: results are not kept (remove it, or set CUASYNC_CACHE_DIR elsewhere)"):format(path)
    return empty
  end
  local s, why = read(path)
  if not s then
    empty.problem = ("the result store %s is %s: the next sweep's results set it aside"):format(path, why)
    return empty
  end
  s.path = path
  return s
end

-- Write this run's results into the store: under a lock, the file is read again and `changes`
-- ({ entries = { [key] = sealed row }, runs = { [device key] = run } }) are put over what is
-- there, so concurrent sweeps of one name keep each other's rows. A file there that is not a
-- store is renamed aside (PATH.unreadable.N), never overwritten unread. Returns nil, or a note
-- saying why nothing was kept or what was set aside.
function M.save(name, changes)
  if os.getenv("CUASYNC_CACHE") == "0" or not pcall(json.lib) then return nil end
  local path = M.path(name)
  local made, merr = fs.mkdirs(path:match("^(.*)/[^/]*$"))
  local lock, lerr = made and fs.lock(path .. ".lock")
  if not lock then
    return ("the result store was not written: %s (this run's rows are in S.rows and its reports)"):format(merr or lerr)
  end
  local ok, note = pcall(function()
    local kind, s, why, aside = fs.kind(path), nil, nil, nil
    if kind == "file" then s, why = read(path) end
    if kind == "dir" or kind == "other" then
      return ("the result store %s is not a file: results are not kept (remove it, or set CUASYNC_CACHE_DIR elsewhere)"):format(path)
    end
    if kind == "file" and not s then
      for n = 1, 1000 do
        aside = ("%s.unreadable.%d"):format(path, n)
        if fs.kind(aside) == "missing" then break end
      end
      if not fs.rename(path, aside) then
        return ("the result store %s is %s and could not be set aside: results are not kept"):format(path, why)
      end
    end
    s = s or { entries = {}, runs = {} }
    for k, e in pairs(changes.entries or {}) do s.entries[k] = e end
    for k, run in pairs(changes.runs or {}) do s.runs[k] = run end
    local okw, werr = fs.write_json(path, { version = M.VERSION, entries = s.entries, runs = s.runs }, { atomic = true })
    if not okw then return ("the result store %s was not written: %s"):format(path, tostring(werr)) end
    if aside then return ("the result store %s was %s: moved to %s, and a new store started"):format(path, why, aside) end
  end)
  lock:unlock()
  if not ok then return ("the result store was not written: %s"):format(tostring(note)) end
  return note
end

-- cuasync.sweep.best(name[, { device = dev }]) -> params, row | nil, why: the best verified
-- measured row of the latest run of sweep `name` on this device and driver (without a device
-- given: the current GPU, or the host rows of a host = true sweep where there is no GPU). The
-- row says which run it came from (row.from); why names the store read, the rows found there
-- and why none qualifies.
local function when(t) return type(t) == "number" and os.date("%Y-%m-%d %H:%M:%S", t) or "at an unknown time" end

function M.best(name, opts)
  M.check_name("sweep.best", name)
  if not rawequal(opts, nil) then   -- a NULL cdata is == nil, but it was given
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
  local path = M.path(name)
  if os.getenv("CUASYNC_CACHE") == "0" then
    return nil, ("no stored results for sweep '%s': CUASYNC_CACHE=0 keeps none (the store would be %s)"):format(name, path)
  end
  local store = M.load(name)
  if store.problem then return nil, store.problem end
  local run = store.runs[key]
  if not run or type(run.keys) ~= "table" then
    local n, others = 0, {}
    for _ in pairs(store.entries) do n = n + 1 end
    for k in pairs(store.runs) do others[#others + 1] = k end
    table.sort(others)
    if n == 0 and #others == 0 then
      return nil, ("no stored results for sweep '%s' (none in %s: run the sweep first)"):format(name, path)
    end
    return nil, ("no run of sweep '%s' stored for %s in %s: its %d row%s are of runs on %s (run it again here)"):format(
      name, key, path, n, n == 1 and "" or "s", #others > 0 and table.concat(others, ", ") or "no device it still names")
  end
  -- verified: a verify passed (a row never verified, its sweep without verify, is not offered)
  local best, best_key, failed, never, gone, bare = nil, nil, 0, 0, 0, 0
  for _, k in ipairs(run.keys) do
    local e = store.entries[k]
    if type(e) ~= "table" or e.kind ~= "measured" or type(e.params) ~= "table" then
      gone = gone + 1
    elseif not row.figure(e) then
      bare = bare + 1
    elseif e.verified == false then
      failed = failed + 1
    elseif e.verified ~= true then
      never = never + 1
    elseif not best or row.figure(e) > row.figure(best) then
      best, best_key = e, k
    end
  end
  if not best then
    local parts = {}
    if failed > 0 then parts[#parts + 1] = ("%d failed verification"):format(failed) end
    if never > 0 then parts[#parts + 1] = ("%d never verified: build(p) returned no verify"):format(never) end
    if bare > 0 then parts[#parts + 1] = ("%d without a figure"):format(bare) end
    if gone > 0 then parts[#parts + 1] = ("%d no longer in the store (damaged, or of an older version)"):format(gone) end
    local stored = #run.keys == 0 and "it stored no measured row" or
      ("it stored %d measured row%s, %s"):format(#run.keys, #run.keys == 1 and "" or "s", table.concat(parts, ", "))
    return nil, ("the latest run of sweep '%s' on %s (%s, read from %s) has no verified measured row: %s; rows that failed, were pruned or skipped are not stored (S:print() shows why)"):format(
      name, key, when(run.at), path, stored)
  end
  local params, out = {}, {}
  for k, v in pairs(best.params) do params[k] = v end
  for k, v in pairs(best) do out[k] = v end
  out.params, out.stored_at, out.sum = params, run.at, nil
  -- which run it came from: the store, the device and driver, when, how many rows, its key
  out.from = { store = path, device = key, at = run.at, rows = #run.keys, key = best_key }
  return params, out
end

return M
