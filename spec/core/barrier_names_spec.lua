-- One fault, two witnesses, one name: a plan's protocol run in the CPU model (P:simulate on a
-- mutated plan) and the watchdog's post-mortem of the same fault on the device (hang.lua's
-- formatter, fed the record the device would write for the wait the model found blocked) name
-- the same barrier of the same pipeline, stage, phase, parity and iteration in the same words
-- (lua/cuasync/model/barrier_names.lua): a TMA consumer starved on full, a producer starved on
-- empty, a cluster's block, a cp.async commit skipped. No GPU: the record is written here.
local ffi = require("ffi")
local cuasync = require("cuasync")
local hang = require("cuasync.hang")
local names = require("cuasync.model.barrier_names")
require("cuasync.watchdog")   -- declares the record's ctype

-- The record a watched wait writes for the wait the model found blocked (r: a simulate result).
local function record_of(P, r)
  local rec = ffi.new("cuasync_watchdog_record")
  rec.state, rec.block[0], rec.warp, rec.lane, rec.cluster_rank = 1, 3, r.which == "empty" and 0 or 1, 0, r.block
  rec.base = 0x400
  rec.bar = rec.base + P[r.which .. "_offset"] + 8 * r.stage
  rec.role = r.which == "empty" and 1 or 2   -- the producer waits on empty, the consumers on full
  rec.stage, rec.iteration, rec.parity, rec.phase_parity = r.stage, r.iteration, r.parity, r.parity
  rec.received, rec.armed = 0xFFFFFFFF, 0xFFFFFFFF
  rec.waited_ns, rec.timeout_ns = 2000e6, 2000e6
  return rec
end

describe("a barrier's name (model/barrier_names.lua)", function()
  it("is one function's: names, keys, phases and places round-trip", function()
    assert.equal("full[2]", names.name("full", 2))
    assert.same({ "full", 2, 1 }, { names.parse("b1_full[2]") })
    assert.same({ "empty", 0 }, { names.parse("empty[0]") })
    assert.is_nil(names.parse("done"))
    assert.same({ "stage", 1 }, { names.parse("stage[1]") })   -- a stage buffer (a race's), never placed
    assert.equal("b1_empty", names.key("empty", 1))
    assert.equal("full", names.key("full", nil))
    for i = 0, 11 do
      for _, which in ipairs({ "full", "empty" }) do
        assert.equal(i, names.iteration(which, i % 4, names.phase(which, i, 4), 4))
      end
    end
    assert.equal(-1, names.phase("empty", 2, 4))   -- a fresh empty barrier: the wait passes at once
    assert.equal("empty[1] of pipeline 'p' (cluster rank 1, stage 1, phase 0, parity 0, iteration 5)",
                 names.place{ pipeline = "p", which = "empty", stage = 1, phase = 0, parity = 0, iteration = 5, rank = 1 })
    assert.equal("full[0] of pipeline 'p' (stage 0)", names.place{ pipeline = "p", which = "full", stage = 0 })
  end)

  local function map(box)
    return cuasync.tensormap{ ptr = 2 ^ 20, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = box }
  end
  local CASES = {
    { "a TMA producer that leaves at iteration 5: a consumer starved on full",
      { name = "main", stages = 4, loads = { map{ 64, 32 } }, producer = { warps = 1 }, consumer = { warps = 4 } },
      { producer_exits_at = 5 }, "full[1] of pipeline 'main' (stage 1, phase 1, parity 1, iteration 5)" },
    { "one consumer warp's release of four: the producer starved on empty",
      { name = "main", stages = 4, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 4 } },
      { consumer_arrivals = 1 }, "empty[0] of pipeline 'main' (stage 0, phase 0, parity 0, iteration 4)" },
    { "a cluster of 2 whose producers leave at iteration 4",
      { name = "pair", stages = 3, stage_bytes = 1024, producer = { warps = 1 }, consumer = { warps = 1 }, cluster = { 2, 1, 1 } },
      { producer_exits_at = 4 }, "full[1] of pipeline 'pair' (cluster rank 0, stage 1, phase 1, parity 1, iteration 4)" },
    { "a cp.async producer thread that skips its commit of iteration 6",
      { name = "cp", stages = 4, loads = { { cp_async = 16384, name = "x" } }, producer = "all", consumer = { warps = 8 } },
      { skip_commit = 6 }, "full[2] of pipeline 'cp' (stage 2, phase 1, parity 1, iteration 6)" },
  }

  for _, case in ipairs(CASES) do
    it("is the same in the model's deadlock and the device's hang: " .. case[1], function()
      local P = cuasync.pipeline(case[2])
      local r = P:mutate(case[3]):simulate{ iterations = 12 }
      assert.equal("deadlock", r.kind, r:report())
      assert.equal(case[4], r.at)
      assert.truthy(r:report():find("\n  at " .. case[4] .. "\n", 1, true), r:report())
      local err = hang.error_from(record_of(P, r), { name = "k.cu", watch = { last = "k" }, program = { hooks = { plan = P } } }, true)
      assert.equal(r.at, err.at)
      assert.truthy(tostring(err):find(" waited 2000 ms on " .. r.at, 1, true), tostring(err))
      assert.same({ names.name(r.which, r.stage), r.which, r.stage, r.phase, r.parity, r.iteration },
                  { err.barrier, err.which, err.stage, err.phase, err.parity, err.iteration })
      assert.equal(names.name(r.which, r.stage), select(1, names.name(names.parse(r.barrier))))
    end)
  end
end)
