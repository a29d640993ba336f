-- The "t4" handler: Kernel Tuner's Open Autotuning Results Schema (T4 1.0.0), so that a sweep's
-- rows load into its tools. One result per evaluated point (a point a strategy never chose,
-- or one skipped for want of a GPU, was not evaluated and has no T4 result):
--   configuration = the params; invalidity = correct | correctness | compile | runtime | timeout
--   | constraints; correctness = 1 for a verified row, else 0; times = { compilation_time (s),
--   runtimes (s: each round's median) }; measurements = time (ms), GB/s or TFLOP/s, ratio.
local common = require("cuasync.tools.report.common")

local M = { VERSION = "1.0.0", REQUIRED = { "configuration", "times", "invalidity", "correctness" } }

-- The T4 invalidity of a row (nil: not evaluated).
function M.invalidity(r)
  if r.kind == "measured" then return r.verified == false and "correctness" or "correct" end
  if r.kind == "pruned" then return "constraints" end
  if r.kind == "cancelled" then return "timeout" end
  if r.kind == "failed" then
    local at = r.failed_in
    if at == nil then   -- a row from before failed_in (merged or stored JSON): its reason's first word
      at = (r.reason or ""):match("^(%a+)")
    end
    if at == "compile" then return "compile" end
    if at == "hang" or at == "timeout" or (r.reason or ""):find("still running after", 1, true) then return "timeout" end
    if at == "verification" then return "correctness" end
    return "runtime"
  end
end

function M.result(S, r)
  local inv = M.invalidity(r)
  if not inv then return nil end
  local times = {}
  if r.compile_ms then times.compilation_time = r.compile_ms / 1e3 end
  if r.ms then
    local rt = {}
    for i, t in ipairs(r.times or { r.ms }) do rt[i] = t / 1e3 end
    times.runtimes = rt
  end
  local m = {}
  if r.ms then m[#m + 1] = { name = "time", value = r.ms, unit = "ms" } end
  if r.gbps then m[#m + 1] = { name = "bandwidth", value = r.gbps, unit = "GB/s" } end
  if r.tflops then m[#m + 1] = { name = "throughput", value = r.tflops, unit = "TFLOP/s" } end
  if r.ratio then m[#m + 1] = { name = "ratio", value = r.ratio, unit = "x " .. (S.baseline_name or "baseline") } end
  local cfg = {}
  for _, k in ipairs(S.order) do cfg[k] = r.params[k] end
  return { timestamp = os.date("!%Y-%m-%dT%H:%M:%SZ", S.result and S.result.at or os.time()), configuration = cfg, objectives = { "time" },
           times = times, invalidity = inv, correctness = (inv == "correct") and 1 or 0, measurements = m }
end

function M.document(S)
  local results = {}
  for _, r in ipairs(S.rows) do results[#results + 1] = M.result(S, r) end
  return { schema_version = M.VERSION, results = results }
end

-- The file's text (M.write writes it; a hard stop keeps it, tools/sweep/stop.lua).
function M.render(S) return common.json_text(M.document(S)) end

function M.write(S, path)
  return common.write("sweep.t4", path, M.render(S))
end

return M
