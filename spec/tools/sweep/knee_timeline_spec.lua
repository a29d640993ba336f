-- S:knee reads a traced sweep's timelines (S:run{ trace = "all" } puts stall_full in each row):
-- beside the measured knee, the stage from which consumers stop waiting on full
-- (model/timeline.lua's knee_stage), and how far it lands from the measured one. No GPU: rows
-- set by hand, as a traced run leaves them.
local sweep = require("cuasync.tools.sweep")

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
end)
