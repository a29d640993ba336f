-- The compile cache: in memory, and on disk under $CUASYNC_CACHE_DIR (default
-- $XDG_CACHE_HOME/cuasync or ~/.cache/cuasync). Keyed on a SHA-256 of everything that can change
-- the output; each entry carries a SHA-256 of its payload (fs.sha256, the one checksum of every
-- sealed file), checked on read. A corrupt, truncated or foreign entry is a miss (and is
-- rewritten), never loaded. CUASYNC_CACHE=0 turns the disk off. Files go through fs.lua.
local fs = require("cuasync.fs")

local M = { stats = { nvrtc = 0, memory = 0, disk = 0, corrupt = 0, written = 0 } }
local memory = {}
local MAGIC = "CUASYNC-CACHE 1"
local warned = false

M.sha256 = fs.sha256

function M.dir()
  local d = os.getenv("CUASYNC_CACHE_DIR")
  if d and d ~= "" then return d end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/cuasync" end
  local home = os.getenv("HOME")
  return home and home ~= "" and home .. "/.cache/cuasync" or nil
end

local function disk_enabled()
  return os.getenv("CUASYNC_CACHE") ~= "0" and M.dir() ~= nil
end

function M.path(key)
  return M.dir() .. "/" .. key .. ".entry"
end

-- Every part is length-prefixed, so no two different inputs serialize alike.
function M.key(parts)
  local out = {}
  for i, p in ipairs(parts) do out[i] = #p .. ":" .. p end
  return M.sha256(table.concat(out, "\0"))
end

local FIELDS = { "ptx", "cubin", "log", "lowered", "nvrtc", "resources" }
-- ptxas' report per kernel (compiler.report), one line each: name and these numbers
local RES = { "registers", "static_smem", "stack", "spill_stores", "spill_loads", "barriers" }

local function encode(entry)
  local lowered = {}
  for expr, name in pairs(entry.lowered) do lowered[#lowered + 1] = expr .. "\0" .. name end
  table.sort(lowered)
  local res = {}
  for k, r in pairs(entry.resources or {}) do
    local line = { k }
    for _, f in ipairs(RES) do line[#line + 1] = tostring(r[f] or 0) end
    res[#res + 1] = table.concat(line, " ")
  end
  table.sort(res)
  local values = { ptx = entry.ptx or "", cubin = entry.cubin or "", log = entry.log or "",
                   lowered = table.concat(lowered, "\0"), nvrtc = entry.nvrtc or "", resources = table.concat(res, "\n") }
  local out = {}
  for _, f in ipairs(FIELDS) do out[#out + 1] = f .. " " .. #values[f] .. "\n" .. values[f] .. "\n" end
  return table.concat(out)
end

local function decode(payload)
  local entry, pos = { lowered = {} }, 1
  for _, f in ipairs(FIELDS) do
    local name, len, nl = payload:match("^(%a+) (%d+)\n()", pos)
    if name ~= f then return nil end
    len = tonumber(len)
    local value = payload:sub(nl, nl + len - 1)
    if #value ~= len or payload:sub(nl + len, nl + len) ~= "\n" then return nil end
    pos = nl + len + 1
    if f == "resources" then
      entry.resources = {}
      for line in value:gmatch("[^\n]+") do
        local words = {}
        for w in line:gmatch("%S+") do words[#words + 1] = w end
        local r = {}
        for i, name in ipairs(RES) do r[name] = tonumber(words[i + 1]) or 0 end
        entry.resources[words[1]] = r
      end
    elseif f == "lowered" then
      local parts = {}
      for s in (value .. "\0"):gmatch("([^%z]*)%z") do parts[#parts + 1] = s end
      if value ~= "" then
        for i = 1, #parts - 1, 2 do entry.lowered[parts[i]] = parts[i + 1] end
      end
    else
      entry[f] = value ~= "" and value or nil
    end
  end
  if pos ~= #payload + 1 then return nil end
  return entry
end

-- No entry is larger than this: a bigger file is not ours (a symlink to /dev/zero would read GBs).
M.MAX_ENTRY = 64 * 1024 * 1024

local function read_disk(key)
  local path = M.path(key)
  -- only a regular file is opened: a directory fails to read, a FIFO would block the open
  local kind, size = fs.kind(path)
  if kind == "missing" then return nil end
  if kind ~= "file" or size > M.MAX_ENTRY then
    M.stats.corrupt = M.stats.corrupt + 1
    return nil
  end
  local data = fs.read(path, M.MAX_ENTRY + 1)
  if type(data) ~= "string" then
    M.stats.corrupt = M.stats.corrupt + 1
    return nil
  end
  local k, len, sum, start = data:match("^" .. MAGIC:gsub("%p", "%%%0") .. " (%x+) (%d+) (%x+)\n()")
  local payload = start and data:sub(start)
  local entry = payload and k == key and #payload == tonumber(len) and M.sha256(payload) == sum
                and decode(payload)
  if not entry then
    M.stats.corrupt = M.stats.corrupt + 1
    return nil
  end
  return entry
end

-- Write data to path atomically, making its directory first: true, or nil and why. Kept for
-- callers written before fs.lua (use fs.mkdirs + fs.write_atomic).
function M.write_atomic(path, data)
  local dir = path:match("^(.*)/[^/]*$")
  local ok, why = true, nil
  if dir and dir ~= "" then ok, why = fs.mkdirs(dir) end
  if not ok then return nil, why end
  return fs.write_atomic(path, data)
end

-- "file" and its size, "missing", or "other" (a directory, FIFO or device: never opened). Kept
-- for callers written before fs.lua: fs.kind tells a directory apart.
function M.file_kind(path)
  local kind, size = fs.kind(path)
  if kind == "dir" then return "other" end
  return kind, size
end

local function write_disk(key, entry)
  local payload = encode(entry)
  local data = ("%s %s %d %s\n"):format(MAGIC, key, #payload, M.sha256(payload)) .. payload
  local ok, why = M.write_atomic(M.path(key), data)
  if not ok then
    -- The compile still succeeded: say once that the disk cache is off, then carry on.
    if not warned then
      io.stderr:write("cuasync: disk cache disabled for this process: ", why, "\n")
      warned = true
    end
    return
  end
  M.stats.written = M.stats.written + 1
end

function M.get(key)
  local e = memory[key]
  if e then
    M.stats.memory = M.stats.memory + 1
    return e
  end
  if disk_enabled() then
    e = read_disk(key)
    if e then
      M.stats.disk = M.stats.disk + 1
      memory[key] = e
      return e
    end
  end
  return nil
end

function M.put(key, entry)
  memory[key] = entry
  if disk_enabled() then write_disk(key, entry) end
end

-- Forget the in-memory entries (the disk is left alone): lets a spec see the disk path.
function M.clear_memory()
  memory = {}
end

return M
