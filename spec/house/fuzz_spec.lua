-- Bad input never crashes, hangs or raises a raw error: spec/support/fuzz.lua feeds every public
-- function random and boundary values (>= 50,000 calls, fresh seed each run, printed) in a
-- process of its own, under a time limit; for the pipeline, model, watchdog and sweep layers it
-- also feeds known-bad fields (each must be refused) and checks results (fuzz_layers.lua).
local isolate = require("cuasync.tools.isolate")
local H = require("helper")

describe("fuzz", function()
  it("50,000 random calls: no crash, no hang, no raw error, no over-long message", function()
    local seed = os.getenv("CUASYNC_FUZZ_SEED") or tostring(os.time() % 1000000)
    local calls = os.getenv("CUASYNC_FUZZ_CALLS") or "50000"
    local ok, out = isolate.run(('arg = { %s, %s }\npackage.path = "spec/?.lua;" .. package.path\ndofile("spec/support/fuzz.lua")'):format(seed, calls),
                                { timeout_s = 300, env = { CUASYNC_CACHE_DIR = H.tmpdir() } })
    io.stderr:write(out:match("fuzz seed[^\n]*") or "", "\n")
    assert.is_true(ok, "the fuzz process died (a crash or the time limit), seed " .. seed .. ":\n" .. out)
    local line = out:match("fuzz seed %d+: (%d+ calls[^\n]*)")
    assert.truthy(line, out)
    assert.truthy(line:find(" 0 raw errors, 0 over%-long messages, 0 hangs"), "seed " .. seed .. ":\n" .. out)
    assert.is_true(tonumber(line:match("^(%d+) calls")) >= 50000)
    -- the layers after the core (spec/support/fuzz_layers.lua): known-bad input refused, results right
    local layers = out:match("fuzz layers: ([^\n]*)")
    io.stderr:write("fuzz layers: ", tostring(layers), "\n")
    assert.truthy(layers, out)
    assert.truthy(layers:find(" 0 silent acceptances;", 1, true) and layers:find(" 0 wrong results", 1, true), "seed " .. seed .. ":\n" .. out)
    assert.truthy(tonumber(layers:match("^(%d+) known%-bad")) >= 500 and tonumber(layers:match("; (%d+) results checked")) >= 500, layers)
  end)
end)
