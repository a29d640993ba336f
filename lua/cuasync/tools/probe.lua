-- cuasync.probe.memory([dev]) -> { latency_ns, idle_ns, dtod_gbps, sms, bytes_per_sm, device }:
-- what a pipeline must keep in flight per SM to cover the memory latency at full bandwidth
-- (Little's law: bytes in flight = bandwidth x latency). kernels-src/probe_memory.cu follows a
-- chain of dependent loads over 256 MiB (five times the L2, no line visited twice): idle_ns is
-- one load alone; latency_ns is one load while every other block streams a copy, the latency
-- at full bandwidth, which Little's law wants. dtod_gbps is cuMemcpyDtoD counting read + write,
-- so the read bandwidth a load pipeline draws is half of it. Measured once per device and
-- driver, then read from $CUASYNC_CACHE_DIR/probe (an entry whose checksum fails is measured again).
local device = require("cuasync.device")
local buffer = require("cuasync.buffer")
local program = require("cuasync.program")
local streams = require("cuasync.stream")
local cache = require("cuasync.cache")
local util = require("cuasync.util")
local bench = require("cuasync.tools.bench")
local json = require("cuasync.tools.json")

local M = { BYTES = 256 * 1024 * 1024, STEPS = 8192, STRIDE = 8193 }

local function path(dev)
  local key = (dev.name .. "_" .. tostring(device.driver_version())):gsub("[^%w_%-]", "_")
  return (cache.dir() or ".") .. "/probe/" .. key .. ".json"
end

local function checksum(r)
  return cache.sha256(("%.6f|%.6f|%.6f|%d|%s"):format(r.latency_ns, r.idle_ns, r.dtod_gbps, r.sms, r.device))
end

local function finish(r)
  r.bytes_per_sm = r.dtod_gbps / 2 * r.latency_ns / r.sms   -- GB/s x ns = bytes
  return r
end

local function measure(dev)
  local prog = program.new{ file = "probe_memory.cu" }
  local mod = prog:compile()
  local chain = mod:kernel("probe_chain", "ptr, u32, u32")
  local chase = mod:kernel("probe_chase", "ptr, u32, u32, ptr")
  local loaded = mod:kernel("probe_loaded", "ptr, u32, u32, ptr, ptr, u64, ptr, ptr")
  local lines = M.BYTES / 128
  local a, b, c, out = buffer.alloc(M.BYTES), buffer.alloc(M.BYTES), buffer.alloc(M.BYTES), buffer.alloc(64)
  local flag = buffer.alloc(16)
  local ok, res = pcall(function()
    chain:launch({ grid = lines / 256, block = 256 }, a, lines, M.STRIDE)
    streams.synchronize()
    -- each rep goes on where the last one ended: no line is loaded twice, none is in L2
    local start = 0
    local t = bench.bench(function()
      chase:launch({ grid = 1, block = 1 }, a, start, M.STEPS, out)
      start = (start + M.STEPS * M.STRIDE) % lines
    end, { warmup = 1, reps = 5 })
    local dtod = bench.bench(function() b:upload(a) end, { warmup = 2, reps = 10 })
    -- under load: the median of five chases, each beside a streaming copy on every other block
    local ns = {}
    for i = 1, 5 do
      out:fill(0); flag:fill(0)
      loaded:launch({ grid = 2 * dev.sms, block = 256 }, a, start, M.STEPS, b, c, M.BYTES / 16, flag, out)
      start = (start + M.STEPS * M.STRIDE) % lines
      streams.synchronize{ timeout_ms = 5000 }
      ns[i] = tonumber(out:download("uint64_t", 1)[0]) / M.STEPS
    end
    return { latency_ns = bench.median(ns), idle_ns = t.median * 1e6 / M.STEPS, dtod_gbps = 2 * M.BYTES / (dtod.median * 1e6),
             sms = dev.sms, device = dev.name }
  end)
  a:close(); b:close(); c:close(); out:close(); flag:close()
  if not ok then error(res, 0) end
  return res
end

function M.memory(dev, opts)
  if dev ~= nil and (type(dev) ~= "table" or type(dev.name) ~= "string" or dev.ordinal == nil) then
    util.fail("probe.memory", ("dev must be a cuasync.device() (got %s)"):format(util.describe(dev)))
  end
  if opts ~= nil then
    util.kind("probe.memory", "opts", opts, "table")
    util.known_fields("probe.memory", opts, { force = true })
  end
  dev = dev or device.current()
  local file = path(dev)
  local doc = not (opts and opts.force) and cache.file_kind(file) == "file" and json.decode_file(file)
  if type(doc) == "table" and type(doc.latency_ns) == "number" and type(doc.idle_ns) == "number" and type(doc.dtod_gbps) == "number"
     and type(doc.sms) == "number" and type(doc.device) == "string" and doc.sum == checksum(doc) then
    doc.sum, doc.cached = nil, true
    return finish(doc)
  end
  local r = measure(dev)
  if os.getenv("CUASYNC_CACHE") ~= "0" then
    local sealed = { latency_ns = r.latency_ns, idle_ns = r.idle_ns, dtod_gbps = r.dtod_gbps, sms = r.sms, device = r.device }
    sealed.sum = checksum(sealed)
    cache.write_atomic(file, json.encode(sealed))
  end
  return finish(r)
end

return M
