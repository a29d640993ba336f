-- tma_copy.lua: copy >= 1 GiB with kernels-src/copy_bulk.cu (cp.async.bulk through a ring of
-- shared-memory stages), verify every byte, and report GB/s beside cuMemcpyDtoD measured in the
-- same run. GB/s counts bytes read + bytes written.
--   luajit examples/tma_copy.lua [--bytes N] [--stages 1,2,4,8] [--chunk 16384] [--reps 20]
-- With no GPU it compiles every variant and says that the launches were skipped.
dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/_path.lua")
local ffi = require("ffi")
local cuasync = require("cuasync")
local copy = require("cuasync.copy")

local opts = { bytes = 2 ^ 30, stages = "4", chunk = "16384", reps = 20, store_lag = 1 }
local i = 1
while i <= #arg do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or opts[k] == nil or arg[i + 1] == nil then
    io.stderr:write("usage: tma_copy.lua [--bytes N] [--stages 1,2,4] [--chunk 8192,16384] [--reps N] [--store_lag N]\n")
    os.exit(2)
  end
  opts[k] = type(opts[k]) == "number" and tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end
local function list(s) local t = {} for x in s:gmatch("%d+") do t[#t + 1] = tonumber(x) end return t end
local stage_list, chunk_list = list(opts.stages), list(opts.chunk)

local ok, why = cuasync.available()
if not ok then
  for _, st in ipairs(stage_list) do
    for _, ch in ipairs(chunk_list) do
      local fits, k = pcall(copy.bulk_kernel, { stages = st, chunk = ch, store_lag = opts.store_lag })
      if fits then
        print(("compiled copy_bulk STAGES=%d CHUNK=%d for %s: cubin %d bytes"):format(st, ch, k.module.arch, #k.module:cubin()))
      else
        print(("copy_bulk STAGES=%d CHUNK=%d: skipped, %s"):format(st, ch, k))
      end
    end
  end
  print("launches skipped: " .. why)
  return
end

local dev = cuasync.device(0)
local bytes = opts.bytes
print(("%s, %d SMs; copying %.2f GiB, %d reps each (median)"):format(dev.name, dev.sms, bytes / 2 ^ 30, opts.reps))

-- fresh random source, generated on the host in pinned memory
local host = cuasync.host_alloc(bytes)
local words = host:as("uint64_t")
local x = ffi.new("uint64_t", (os.time() * 2654435761) % 2 ^ 31 + 0x9E3779B97F4A7C15ULL)
for w = 0, bytes / 8 - 1 do
  x = bit.bxor(x, bit.rshift(x, 12)); x = bit.bxor(x, bit.lshift(x, 25)); x = bit.bxor(x, bit.rshift(x, 27))
  words[w] = x * 0x2545F4914F6CDD1DULL
end
local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
src:upload(host)
local back = cuasync.host_alloc(bytes)
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

local function verify(label)
  ffi.fill(back.ptr, bytes, 0)
  dst:download_to(back)
  if ffi.C.memcmp(back.ptr, host.ptr, bytes) ~= 0 then
    error(label .. ": copy differs from the source", 0)
  end
end

local function gbps(ms) return 2 * bytes / (ms * 1e6) end

-- cuMemcpyDtoD, the yardstick, measured in this run
dst:fill(0xA5)
dst:upload(src)
verify("cuMemcpyDtoD")
local base = cuasync.bench(function() dst:upload(src) end, { warmup = 3, reps = opts.reps })
print(("%-28s %8.3f ms %8.1f GB/s   1.000"):format("cuMemcpyDtoD", base.median, gbps(base.median)))

local best
for _, st in ipairs(stage_list) do
  for _, ch in ipairs(chunk_list) do
    local fits, k = pcall(copy.bulk_kernel, { stages = st, chunk = ch, store_lag = opts.store_lag })
    if not fits then
      print(("copy_bulk stages=%d chunk=%d: skipped, %s"):format(st, ch, k))
      goto next
    end
    local run = k:prepare(dst, src, bytes)
    dst:fill(0xA5)
    run()
    cuasync.synchronize()
    local label = ("copy_bulk stages=%d chunk=%d"):format(st, ch)
    verify(label)
    local r = cuasync.bench(run, { warmup = 3, reps = opts.reps })
    local ratio = base.median / r.median
    print(("%-28s %8.3f ms %8.1f GB/s   %.3f  (grid %d, verified)"):format(label, r.median, gbps(r.median), ratio, k:grid(bytes)))
    if not best or ratio > best.ratio then best = { label = label, ratio = ratio } end
    ::next::
  end
end
print(("best: %s at %.3f of cuMemcpyDtoD"):format(best.label, best.ratio))
host:close(); back:close(); src:close(); dst:close()
