-- How far a sweep row's figure can be trusted, from its rounds: pure Lua, no GPU.
--   spread      the relative interquartile range of the row's per-round figures: (q3 - q1) / median.
--               Per-round ratios to the baseline timed in the same round where there is one (the
--               chip's clock drift falls on both and cancels), else work (or 1) per time.
--   stable      spread <= limit (default 2%, the figure Nsight Python flags a measurement at).
--   separated   two rows told apart: over 5 or more rounds both ran, the leader is ahead in so
--               many that a coin would do it less than 5% of the time (a one-sided sign test: 5
--               of 5, 7 of 7, 8 of 9, 9 of 10, ...); from different rounds (or fewer shared),
--               their interquartile ranges do not overlap. Both on the figure kind they share
--               (M.kind: ratio to the baseline, work per ms, or 1/ms).
-- Auto rounds (M.leaders, M.decide): the variants not separated from the best get more rounds.
local M = { LIMIT = 0.02, ALPHA = 0.05, PAIRED = 5 }

local function sorted(t)
  local s = {}
  for i = 1, #t do s[i] = t[i] end
  table.sort(s)
  return s
end

-- The q-quantile of a sorted list, linearly interpolated between order statistics (the usual
-- "type 7": q = 0 the least, q = 1 the most, q = 0.5 the median).
function M.quantile(s, q)
  local n = #s
  if n == 0 then error("cuasync.model.spread: the quantile of an empty list", 2) end
  local h = (n - 1) * q + 1
  local lo = math.floor(h)
  if lo >= n then return s[n] end
  return s[lo] + (h - lo) * (s[lo + 1] - s[lo])
end

-- { q1, median, q3 } of a list of numbers.
function M.quartiles(t)
  local s = sorted(t)
  return M.quantile(s, 0.25), M.quantile(s, 0.5), M.quantile(s, 0.75)
end

-- The relative interquartile range of a list (nil with fewer than 2 figures: no spread to tell).
function M.rel_iqr(t)
  if #t < 2 then return nil end
  local q1, med, q3 = M.quartiles(t)
  return (q3 - q1) / med
end

-- Per-round ratios to the baseline: base_times[i] / times[i], for the rounds both have.
function M.ratios(times, base_times)
  local r = {}
  for i = 1, math.min(#times, #(base_times or {})) do r[i] = base_times[i] / times[i] end
  return r
end

-- The kind of per-round figure two rows (or one) share, the one the ranking uses (row.figure):
-- "ratio" (to the baseline in the same round) where every row has base_times, else "work"
-- (work / time: bytes or flops a ms) where every row has work, else "time" (1 / time).
function M.kind(...)
  local ratio, work = true, true
  for i = 1, select("#", ...) do
    local r = select(i, ...)
    ratio = ratio and r.base_times ~= nil and #r.base_times > 0
    work = work and r.work ~= nil
  end
  return ratio and "ratio" or work and "work" or "time"
end

-- The per-round figures of a row, higher is better, of a kind (default: its own, M.kind(r)).
function M.figures(r, kind)
  kind = kind or M.kind(r)
  if kind == "ratio" then return M.ratios(r.times, r.base_times) end
  local f, w = {}, kind == "work" and r.work or 1
  for i, t in ipairs(r.times or {}) do f[i] = w / t end
  return f
end

-- r.spread and r.stable from its rounds (r.times, r.base_times); limit: the stability bar.
function M.mark(r, limit)
  r.spread = M.rel_iqr(M.figures(r))
  if r.spread then r.stable = r.spread <= (limit or M.LIMIT) else r.stable = nil end
  return r
end

-- P(at least k heads in n fair tosses): the sign test's one-sided p-value.
function M.sign_p(k, n)
  local p, c = 0, 1   -- c = C(n, j), from j = 0
  for j = 0, n do
    if j >= k then p = p + c end
    c = c * (n - j) / (j + 1)
  end
  return p / 2 ^ n
end

-- The rounds of a row by id: r.round_ids where the timed rounds recorded them, else 1..n.
local function ids(r)
  if r.round_ids then return r.round_ids end
  local t = {}
  for i = 1, #(r.times or {}) do t[i] = i end
  return t
end

-- Whether a (the leader) is told apart from b, and a's lead (a's median figure / b's - 1), on
-- the per-round figures both rows have (M.kind). Rows of one batch are compared round by round
-- over the rounds both ran (a sign test: it needs 5 of them); others, or fewer shared rounds,
-- by their quartiles.
function M.separated(a, b)
  local kind = M.kind(a, b)
  local fa, fb = M.figures(a, kind), M.figures(b, kind)
  local _, ma = M.quartiles(fa)
  local _, mb = M.quartiles(fb)
  local lead = ma / mb - 1
  if a.batch ~= nil and a.batch == b.batch then
    local at = {}
    for i, id in ipairs(ids(b)) do at[id] = fb[i] end
    local n, wins = 0, 0
    for i, id in ipairs(ids(a)) do
      if at[id] and fa[i] then
        n = n + 1
        if fa[i] > at[id] then wins = wins + 1 end
      end
    end
    if n >= M.PAIRED then return M.sign_p(wins, n) <= M.ALPHA, lead end
  end
  if #fa < 2 or #fb < 2 then return false, lead end
  local a1 = M.quartiles(fa)
  local _, _, b3 = M.quartiles(fb)
  return a1 > b3, lead
end

-- The best of rows by median figure (higher is better), and the list sorted best first.
function M.rank(rows)
  local list, timed = {}, {}
  for _, r in ipairs(rows) do if r.times and #r.times > 0 then timed[#timed + 1] = r end end
  local kind = #timed > 0 and M.kind(unpack(timed)) or "time"   -- one unit for all: the kind they share
  for _, r in ipairs(timed) do
    local _, m = M.quartiles(M.figures(r, kind))
    list[#list + 1] = { row = r, figure = m }
  end
  table.sort(list, function(x, y) return x.figure > y.figure end)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.row end
  return out
end

-- The rows not separated from the best (the best first): those auto rounds go on measuring.
function M.leaders(rows)
  local ranked = M.rank(rows)
  local best = ranked[1]
  if not best then return {} end
  local out = { best }
  for i = 2, #ranked do
    if not M.separated(best, ranked[i]) then out[#out + 1] = ranked[i] end
  end
  return out
end

-- Auto rounds' rule: more rounds while the best has a tie and the cap allows. rounds: how many
-- the leaders have had. Returns the leaders to measure again (the empty list when done), and why.
function M.decide(rows, rounds, cap)
  local lead = M.leaders(rows)
  if #lead <= 1 then return {}, #lead == 1 and "separated" or "no rows" end
  if rounds >= cap then return {}, "cap" end
  return lead, "tied"
end

-- The best line's words: "best by 1.8% over #12 (separated)" or "tied with #12, #30 within noise".
-- rows: the measured rows the best was chosen from (each with index). Each row is judged by the
-- rounds it shared with the others: a winner measured again alone is judged by its figures in
-- the sweep's rounds (r.in_sweep), not by its lone batch, whose baseline moved between batches
-- by more than the rows differ. A slow row (stopped after its first rounds for being over twice
-- the best's time per unit of work) is never a tie: the early exit already told it apart.
function M.verdict(best, rows)
  local views, of = {}, {}
  for _, r in ipairs(rows) do
    if not r.slow then
      local v = r.in_sweep and setmetatable({ index = r.index }, { __index = r.in_sweep }) or r
      views[#views + 1], of[v] = v, r
    end
  end
  local mine
  for _, v in ipairs(views) do if of[v] == best then mine = v end end
  mine = mine or best
  local ties, runner = {}, nil
  for _, v in ipairs(M.rank(views)) do
    if of[v] ~= best then
      runner = runner or v
      if not M.separated(mine, v) then ties[#ties + 1] = "#" .. tostring(v.index) end
    end
  end
  if not runner then return #views < #rows and "the only row not stopped as slow" or "the only measured row", true end
  if #ties == 0 then
    local _, lead = M.separated(mine, runner)
    return ("best by %.1f%% over #%s (separated)"):format(100 * lead, tostring(runner.index)), true
  end
  local shown = #ties > 6 and table.concat(ties, ", ", 1, 6) .. (", and %d more"):format(#ties - 6) or table.concat(ties, ", ")
  return ("tied with %s within noise"):format(shown), false
end

return M
