-- model/spread.lua: a row's spread, stability, the separation of two rows, auto rounds' rule and
-- the best line's words; model/ceiling.lua: the ceiling table and a row's fraction of it. Pure.
local spread = require("cuasync.model.spread")
local ceiling = require("cuasync.model.ceiling")

local function near(a, b, tol) assert.is_true(math.abs(a - b) <= (tol or 1e-9), ("%s vs %s"):format(a, b)) end

describe("model.spread", function()
  it("takes quantiles between order statistics (type 7)", function()
    local s = { 1, 2, 3, 4, 5 }
    near(spread.quantile(s, 0), 1)
    near(spread.quantile(s, 0.25), 2)
    near(spread.quantile(s, 0.5), 3)
    near(spread.quantile(s, 1), 5)
    near(spread.quantile({ 1, 2 }, 0.25), 1.25)
    assert.has_error(function() spread.quantile({}, 0.5) end, "cuasync.model.spread: the quantile of an empty list")
  end)

  it("gives a relative IQR, none with fewer than 2 rounds", function()
    near(spread.rel_iqr({ 10, 10, 10 }), 0)
    near(spread.rel_iqr({ 9, 10, 11 }), (10.5 - 9.5) / 10)
    assert.is_nil(spread.rel_iqr({ 10 }))
  end)

  it("marks a row stable or not on its per-round ratios to the baseline", function()
    -- the chip slows by 10% over the rounds: times and baseline move together, the ratio holds
    local r = { times = { 1.0, 1.05, 1.1, 1.15, 1.2 }, base_times = { 1.0, 1.05, 1.1, 1.15, 1.2 } }
    spread.mark(r)
    near(r.spread, 0)
    assert.is_true(r.stable)
    -- the same times without a baseline: the drift is all spread
    local t = spread.mark({ times = { 1.0, 1.05, 1.1, 1.15, 1.2 } })
    assert.is_true(t.spread > 0.02)
    assert.is_false(t.stable)
    assert.is_true(spread.mark({ times = { 1.0, 1.05, 1.1, 1.15, 1.2 } }, 0.2).stable)
    assert.is_nil(spread.mark({ times = { 1 } }).stable)
  end)

  it("takes the sign test's tail: 5 of 5 is 1/32, 8 of 9 is 10/512", function()
    near(spread.sign_p(5, 5), 1 / 32)
    near(spread.sign_p(4, 5), 6 / 32)
    near(spread.sign_p(8, 9), 10 / 512)
    near(spread.sign_p(0, 3), 1)
  end)

  it("separates rows of one batch round by round, others by their quartiles", function()
    local a = { times = { 1.00, 1.10, 1.00, 1.10, 1.00 }, batch = "0:1" }
    local b = { times = { 1.02, 1.12, 1.02, 1.12, 1.02 }, batch = "0:1" }
    local ok, lead = spread.separated(a, b)
    assert.is_true(ok)        -- faster in every round, by 2%, though the rounds themselves vary by 10%
    assert.is_true(lead > 0.01 and lead < 0.03)
    b.batch = "0:2"           -- the same figures from other rounds: the quartiles overlap
    assert.is_false((spread.separated(a, b)))
    local c = { times = { 1.5, 1.5, 1.5 }, batch = "0:3" }
    assert.is_true((spread.separated(a, c)))
    local coin = { times = { 1.01, 1.09, 0.99, 1.11, 1.02 }, batch = "0:1" }
    assert.is_false((spread.separated(a, coin)))   -- ahead in 3 rounds of five
    local four = { times = { 1.01, 1.11, 1.01, 1.11, 0.99 }, batch = "0:1" }
    assert.is_false((spread.separated(a, four)))   -- 4 of 5: a coin does that 19% of the time
  end)

  it("decides auto rounds: the leaders while tied, nothing once separated or at the cap", function()
    local tie = { { index = 1, times = { 1, 1.01, 0.99, 1, 1.01 }, batch = "x" },
                  { index = 2, times = { 1.01, 1, 0.99, 1.01, 1 }, batch = "x" },
                  { index = 3, times = { 2, 2, 2, 2, 2 }, batch = "x" } }
    local lead, why = spread.decide(tie, 5, 20)
    assert.are.equal("tied", why)
    assert.are.equal(2, #lead)   -- #3 is separated: it gets no more rounds
    lead, why = spread.decide(tie, 20, 20)
    assert.are.same({}, lead)
    assert.are.equal("cap", why)
    lead, why = spread.decide({ tie[1], tie[3] }, 5, 20)
    assert.are.same({}, lead)
    assert.are.equal("separated", why)
  end)

  it("words the best line: separated with its lead, or tied with the rows in its noise", function()
    local a = { index = 4, times = { 1.0, 1.0, 1.0, 1.0, 1.0 }, batch = "b" }
    local b = { index = 7, times = { 1.1, 1.1, 1.1, 1.1, 1.1 }, batch = "b" }
    local text, sep = spread.verdict(a, { a, b })
    assert.are.equal("best by 10.0% over #7 (separated)", text)
    assert.is_true(sep)
    local c = { index = 9, times = { 1.0, 0.99, 1.01, 1.0, 1.01 }, batch = "b" }
    text, sep = spread.verdict(a, { a, b, c })
    assert.are.equal("tied with #9 within noise", text)
    assert.is_false(sep)
    assert.are.equal("the only measured row", (spread.verdict(a, { a })))
    local slow = { index = 2, times = { 2.5 }, batch = "b", slow = true }   -- one round: no sign test passes on it
    assert.are.equal("best by 10.0% over #7 (separated)", (spread.verdict(a, { a, b, slow })))
    assert.are.equal("the only row not stopped as slow", (spread.verdict(a, { a, slow })))
  end)

  it("judges a winner measured again alone by the sweep's rounds, and pairs rounds by id", function()
    -- alone, its baseline ran slow (1.1 ms): 1.10 of it; in the sweep's rounds it was a tie at 1.0
    local base = { 1, 1, 1, 1, 1 }
    local other = { index = 3, times = { 1.0, 0.99, 1.01, 1.0, 1.0 }, base_times = base, batch = "s" }
    local best = { index = 5, times = { 1, 1, 1, 1, 1 }, base_times = { 1.1, 1.1, 1.1, 1.1, 1.1 }, batch = "alone",
                   in_sweep = { times = { 1.0, 1.01, 0.99, 1.0, 1.0 }, base_times = base, batch = "s" } }
    assert.are.equal("tied with #3 within noise", (spread.verdict(best, { best, other })))
    best.in_sweep = nil   -- judged by its lone batch, it would look separated
    assert.are.equal("best by 10.0% over #3 (separated)", (spread.verdict(best, { best, other })))
    -- a row that ran rounds 1-5 and 8-9 (auto rounds) is paired with another's by round id
    local a = { times = { 1, 1, 1, 1, 1, 1, 1 }, round_ids = { 1, 2, 3, 4, 5, 8, 9 }, batch = "x" }
    local b = { times = { 2, 2, 2, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1 }, round_ids = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, batch = "x" }
    assert.is_true((spread.separated(a, b)))   -- 7 shared rounds, a ahead in all
    local figs = spread.figures({ times = { 2, 4 }, work = 8 })
    assert.are.same({ 4, 2 }, figs)          -- work per ms where there is no baseline
  end)
end)

describe("model.ceiling", function()
  it("puts a Hopper SM at 4096 dense bf16 FLOP a clock: 811 TFLOP/s at 1.5 GHz on 132 SMs", function()
    near(ceiling.peak_flops("sm_90a", "bf16", 132, 1500) / 1e12, 811.008, 1e-6)
    near(ceiling.peak_flops("sm_90", "e4m3", 132, 1830) / 1e12, 1978.86, 0.01)
    local none, why = ceiling.peak_flops("sm_90", "int4", 132, 1500)
    assert.is_nil(none)
    assert.are.equal("no int4 entry in the sm_90 table (dtypes: bf16, e4m3, e5m2, f16, f32, f64, f64_tensor, s8, tf32)", why)
    assert.are.equal("no FLOP-per-clock table for sm_75 (known: sm_80, sm_90)", select(2, ceiling.peak_flops("sm_75", "bf16", 1, 1)))
  end)

  it("gives the memory's spec bandwidth from its clock and bus width", function()
    near(ceiling.memory_gbps(3201000, 6144), 4917.0, 0.5)
  end)

  it("fills a row's ceiling at the clock it ran at, or says why not", function()
    local dev = { arch = "sm_90a", sms = 132, mem_clock_khz = 3201000, bus_width_bits = 6144 }
    local r = { tflops = 730 }
    assert.is_nil(ceiling.fill(r, dev, { flops = 1, dtype = "bf16" }, 1500))
    near(r.ceiling, 730 / 811.008, 1e-6)
    assert.are.equal("peak at 1500 MHz", r.ceiling_of)
    assert.matches("no dtype", ceiling.fill({ tflops = 1 }, dev, { flops = 1 }, 1500))
    assert.matches("no SM clock", ceiling.fill({ tflops = 1 }, dev, { flops = 1, dtype = "bf16" }, nil))
    local b = { gbps = 4000 }
    ceiling.fill(b, dev, { bytes = 1 }, nil, 4200)
    near(b.ceiling, 4000 / ceiling.memory_gbps(3201000, 6144), 1e-9)
    near(b.of_copy, 4000 / 4200, 1e-12)
    assert.are.equal("memory spec", b.ceiling_of)
  end)
end)
