-- example.gemm_family(o, family, axes, sweep, check_cublas): examples/gemm_sweep.lua --family. For each
-- shape { m, n, k } of the family and each output type of o.out_types, the sweep of that shape
-- (sweep(m, n, k, out, axes, data): the same axes, and rules that derive the pruning from the
-- shape), its table, cuBLAS through the same gate; then one table: the best variant of each shape,
-- its ratio to cuBLAS (same rounds) and TFLOP/s, and where m <= 256 (bound by memory, not math) its
-- bandwidth (A + B + C moved once each) beside cuMemcpyDtoD's, measured in this run. With
-- o.timeline, traced(params, m, n, k, out, data) builds each best variant traced in every block and
-- a second table says where its time goes (example.gemm_where). Returns how many of those failed.
local cuasync = require("cuasync")
local row = require("cuasync.tools.sweep.row")
local command = require("cuasync.tools.commands.sweep")
local gemm_data = require("example.gemm")
local where = require("example.gemm_where")

local SKINNY = 256   -- m at or below which the row says its bandwidth
local OUT_BYTES = { f32 = 4, bf16 = 2 }

-- cuMemcpyDtoD's bandwidth now (read + write counted, as DESIGN.md's figures), GB/s.
local function dtod_gbps()
  local bytes = 512 * 2 ^ 20
  local src, dst = cuasync.alloc(bytes), cuasync.alloc(bytes)
  local t = cuasync.bench(function() dst:upload(src) end, { warmup = 3, reps = 20 })
  src:close(); dst:close()
  return 2 * bytes / (t.median * 1e6)
end

-- The timeline's table: a line a shape whose best variant was traced.
local function where_table(lines)
  local any = false
  for _, l in ipairs(lines) do any = any or l.where ~= nil or l.where_error ~= nil end
  if not any then print("\nNo variant traced (--timeline traces each shape's measured best)") return end
  print("\nWhere each best variant's time goes (traced in every block, verified; shares of the time the rings kept; lost:")
  print("events past the rings, whose warps' shares are of their newest events):")
  print(("%-18s %-4s %10s %10s %9s %14s %12s %8s  %s"):format("shape", "out", "cons. full", "prod. empty", "epilogue", "tail (÷ time)",
        "issue->land", "lost", "diagnosis"))
  for _, l in ipairs(lines) do
    local w = l.where
    if w then
      print(("%-18s %-4s %9.1f%% %10.1f%% %8.1f%% %6.1f µs %5.1f%% %9.0f ns %8d  %s"):format(l.shape, l.out, 100 * (w.consumer_full or 0),
        100 * (w.producer_empty or 0), 100 * (w.epilogue or 0), w.tail_us, 100 * (w.tail or 0), w.landed_ns or 0, w.lost or 0,
        w.diagnosis or ""))
    elseif l.where_error then
      print(("%-18s %-4s %s"):format(l.shape, l.out, l.where_error))
    end
  end
end

return function(o, family, axes, sweep, check_cublas, traced)
  local copy = cuasync.available() and dtod_gbps()   -- without a GPU: every shape's pruning, nothing timed
  local lines, failed = {}, 0   -- failed: best variants whose traced build did not build or verify
  for _, shape in ipairs(family) do
    local m, n, k = shape[1], shape[2], shape[3]
    local d
    local function data() d = d or gemm_data(m, n, k) return d end
    for _, out in ipairs(o.out_types) do
      local S = sweep(m, n, k, out, axes, data)
      S:run()
      local verdict
      command.report(S, o, function() if d then verdict = check_cublas(d, m, n, k, out) end end)
      local b, line = S.best, { shape = ("%dx%dx%d"):format(m, n, k), out = out }
      if b then
        line.variant = row.params_text(S.order, b.params)
        line.ratio, line.tflops, line.ms = b.ratio, b.tflops, b.ms
        line.cublas_tflops = b.base_ms and 2 * m * n * k / (b.base_ms * 1e9)
        line.stable = b.stable
        if m <= SKINNY then
          local bytes = (m * k + n * k) * 2 + m * n * OUT_BYTES[out]
          line.gbps = bytes / (b.ms * 1e6)
        end
      end
      line.cublas_check = verdict or "not run"
      if o.timeline and b and d then
        local ok, w, err = pcall(function() return where(traced(b.params, m, n, k, out, d), b.ms) end)
        if ok then line.where, line.where_error = w, err else line.where_error = "not traced: " .. tostring(w) end
        if line.where_error then failed = failed + 1 end
      end
      lines[#lines + 1] = line
    end
    if d then for _, key in ipairs({ "a", "b", "c", "r" }) do d[key]:close() end end
    collectgarbage()
  end
  print(copy and ("\nThe family (cuMemcpyDtoD in this run: %.0f GB/s, read + write):"):format(copy) or "\nThe family (no GPU: nothing timed):")
  print(("%-18s %-4s %8s %9s %9s %12s %7s  %s"):format("shape", "out", "÷cuBLAS", "TFLOP/s", "cuBLAS", "GB/s (÷DtoD)", "stable", "best variant"))
  for _, l in ipairs(lines) do
    if l.variant then
      print(("%-18s %-4s %8.3f %9.1f %9.1f %12s %7s  %s%s"):format(l.shape, l.out, l.ratio or 0, l.tflops or 0, l.cublas_tflops or 0,
        l.gbps and ("%.0f (%.2f)"):format(l.gbps, l.gbps / copy) or "-", tostring(l.stable), l.variant,
        l.cublas_check ~= "verified" and ("  [cuBLAS: " .. l.cublas_check .. "]") or ""))
    else
      print(("%-18s %-4s no variant measured (see its table above)"):format(l.shape, l.out))
    end
  end
  if o.timeline then where_table(lines) end
  return failed
end
