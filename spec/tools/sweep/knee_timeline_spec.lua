-- S:knee reads a traced sweep's timelines (S:run{ trace = "all" } puts stall_full in each row):
-- beside the measured knee, the stage from which consumers stop waiting on full
-- (model/timeline.lua's knee_stage), and how far it lands from the measured one. No GPU: rows
-- set by hand, as a traced run leaves them.
local sweep = require("cuasync.tools.sweep")
local cuasync = require("cuasync")
local H = require("helper")
local gpu_it = H.gpu_it(it, pending)

local function traced(figs, full)
  local S = sweep{ name = "knee_timeline", host = true, params = { stages = { 1, 2, 3, 4, 5 } },
                   build = function() return { run = function() end } end }
  S.rows = {}
  for i = 1, #figs do
    S.rows[i] = { index = i, kind = "measured", params = { stages = i }, ratio = figs[i], ms = 1, stall_full = full[i] }
  end
  return S
end

describe("sweep knee with timelines", function()
  it("says where consumers stop waiting on full, and how many steps that is from the measured knee", function()
    local K = traced({ 0.5, 0.8, 0.95, 0.96, 0.965 }, { 0.4, 0.2, 0.04, 0.01, 0.01 }):knee{ x = "stages" }
    assert.equal(3, K.series[1].knee)
    assert.equal(3, K.series[1].timeline)
    assert.equal(0, K.series[1].timeline_off)
    assert.truthy(K:text():find("the timeline: consumers stop waiting on full at stages=3, 0 steps off", 1, true), K:text())
    assert.truthy(K:text():find("\nthe timeline's knee within one step in 1 of 1 traced series", 1, true), K:text())
    -- still waiting at 3 (6%): the timeline says 4, one step past the measured knee
    K = traced({ 0.5, 0.8, 0.95, 0.96, 0.965 }, { 0.4, 0.2, 0.06, 0.02, 0.01 }):knee{ x = "stages" }
    assert.equal(4, K.series[1].timeline)
    assert.equal(1, K.series[1].timeline_off)
  end)

  it("says nothing of timelines where no row was traced", function()
    local S = traced({ 0.5, 0.8, 0.95, 0.96, 0.965 }, {})
    local K = S:knee{ x = "stages" }
    assert.is_nil(K.series[1].timeline)
    assert.is_nil(K:text():find("timeline", 1, true))
  end)

  gpu_it("S:run{ trace = \"all\" } puts each variant's timeline in its row, verified, and the knee reads it", function()
    local W, Hh, rows = 1024, 1024, 32
    local n = W * Hh
    local src, dst = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
    src:fill_random{ dtype = "u32" }
    local function map(real) return cuasync.tensormap{ buffer = real and src or nil, ptr = not real and 256 or nil,
      bytes = not real and n * 4 or nil, encode = real, dtype = "f32", dims = { W, Hh }, box = { 64, rows } } end
    local function plan(p) return cuasync.pipeline{ name = "tma", stages = p.stages, loads = { { map = map(false), name = "in" } },
      producer = { warps = 1 }, consumer = { warps = 2 } } end
    local function program(p) return plan(p):program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = rows } } end
    local S = sweep{ name = "knee_timeline_gpu", params = { stages = { 1, 2, 3 } }, program = program, rounds = 2, reps = 3,
      build = function(p)
        local P = plan(p)
        local k = program(p):compile():kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
        return { run = k:prepare(P:launch_config{ grid = 16 }, map(true), dst, W, W / 64, (W / 64) * (Hh / rows)), bytes = 2 * n * 4,
                 poison = function() dst:poison() end, verify = function() return cuasync.compare(dst, src, { dtype = "u32" }) end }
      end }
    S:run{ trace = "all", quiet = true, force = true, jobs = 1 }
    local traced = 0
    for _, r in ipairs(S.rows) do
      assert.equal("measured", r.kind, tostring(r.reason))
      assert.is_true(r.verified)
      if r.stall_full then
        traced = traced + 1
        assert.is_true(r.stall_full >= 0 and r.stall_full <= 1 and r.stall_empty >= 0 and r.stall_empty <= 1)
        assert.truthy(r.diagnosis)
      end
    end
    assert.equal(3, traced, table.concat(S.notes or {}, "; "))
    local K = S:knee{ x = "stages" }
    assert.truthy(K.series[1].timeline == nil or type(K.series[1].timeline) == "number")
    assert.truthy(S:write("csv", H.tmpdir() .. "/k.csv"))
  end)
end)
