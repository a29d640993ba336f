-- pipeline_model.lua: the plan of examples/pipeline_tma.lua on the CPU, no GPU needed: its
-- derivation, its protocol simulated over random interleavings, then the field's classic bug
-- planted (the producer arms 1024 bytes fewer than the box brings) and the counterexample the
-- checker finds, with each role's timeline up to its blocking wait and every barrier's state.
--   luajit examples/pipeline_model.lua [--stages 4] [--runs 200] [--seed 1]
--                                      [--mutation tx_delta|consumer_arrivals|parity_flip|producer_exits_at]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local o = cli.script{ options = {
  { "--stages N", "stages of the plan", default = 4 },
  { "--runs N", "random interleavings simulated", default = 200 },
  { "--seed N", "the interleavings' seed", default = 1 },
  { "--mutation NAME", "the bug planted", default = "tx_delta",
    choices = { "tx_delta", "consumer_arrivals", "parity_flip", "producer_exits_at" } },
} }
local MUTATIONS = { tx_delta = { tx_delta = -1024 }, consumer_arrivals = { consumer_arrivals = 3 },
                    parity_flip = { parity_flip = true }, producer_exits_at = { producer_exits_at = 2 * o.stages + 1 } }
local mutation = MUTATIONS[o.mutation]

-- a plan-only tensor map (encode = false): the same shapes as pipeline_tma.lua, no driver needed
local tm = cuasync.tensormap{ ptr = 256, bytes = 16384 * 16384 * 4, encode = false, dtype = "f32",
                              dims = { 16384, 16384 }, box = { 64, 64 } }
local P = cuasync.pipeline{ name = "tma", stages = o.stages, loads = { { map = tm, name = "in" } },
                            producer = { warps = 1 }, consumer = { warps = 4 } }
print(P:explain())
local ok = P:simulate{ iterations = 3 * o.stages + 1, seed = o.seed, runs = o.runs }
print(("\nsimulated: %s"):format(ok:report()))

local bad = P:mutate(mutation)
local k, v = next(mutation)
local r = bad:simulate{ iterations = 3 * o.stages + 1, seed = o.seed, runs = o.runs }
print(("\nmutated (%s = %s): %s at %s (block %d, stage %d)\n"):format(k, tostring(v), r.kind or "nothing found",
  r.barrier or "-", r.block or 0, r.stage or -1))
print(r:report(6))
