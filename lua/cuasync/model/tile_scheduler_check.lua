-- A tile scheduler's invariants (model/tile_scheduler.lua's walk), as a list of violations: every
-- (tile, k-iteration) done once; a tile's k-ranges contiguous and in order; one epilogue a tile;
-- each split tile in a slot of its own (its turnstile flag and partial) inside the workspace; every
-- wait aimed at a lower-index CTA; no cycle in the graph of waits. Pure Lua; tile_scheduler.violations
-- calls it with every CTA's units.
local M = {}

-- The wait-for graph: unit (c, i) waits for (c, i - 1) (program order) and for the unit its
-- turnstile waits on (the tile's k-range before it; reduce: every peer of its cluster, and each
-- peer's unit before). A cycle is a deadlock even with every CTA resident. Returns a cycle's
-- description, or nil.
local function cycle(s, per, before)
  local id, nodes = {}, {}
  for c = 0, s.ctas - 1 do
    for i, u in ipairs(per[c]) do
      local n = { c = c, i = i, u = u, deps = {} }
      nodes[#nodes + 1] = n
      id[u] = n
      if i > 1 then n.deps[#n.deps + 1] = id[per[c][i - 1]] end
    end
  end
  for _, n in ipairs(nodes) do
    for _, d in ipairs(before(n)) do n.deps[#n.deps + 1] = id[d] end
  end
  local state = {}
  local function visit(n)
    state[n] = 1
    for _, d in ipairs(n.deps) do
      if state[d] == 1 then
        return ("CTA %d's unit %d (tile %d, k %d..%d) waits, through a chain, on itself"):format(n.c, n.i, n.u.tile, n.u.k_begin, n.u.k_end)
      end
      if not state[d] then local r = visit(d) if r then return r end end
    end
    state[n] = 2
  end
  for _, n in ipairs(nodes) do if not state[n] then local r = visit(n) if r then return r end end end
end

-- The invariants a spec checks, as a list of violations (empty: none): every (tile, k-iteration)
-- done once; a tile's k-ranges contiguous, each waiting for the one before it and publishing for
-- the one after; one epilogue per tile, by the unit holding its last k-range (reduce: rank 0, and
-- every rank of a cluster doing as many units); a split tile's units in one slot of its own, inside
-- the workspace (s.slots); each turnstile wait aimed at a lower-index CTA (so that, with more CTAs
-- than fit on the device at once, blocks dispatched in index order still progress); no cycle in
-- the wait-for graph.
function M.violations(s, per)
  local bad, seen, ranges, cta, holder = {}, {}, {}, {}, {}
  for c = 0, s.ctas - 1 do
    for _, u in ipairs(per[c]) do
      cta[u] = c
      for k = u.k_begin, u.k_end - 1 do
        local key = u.tile * s.k_tiles + k
        if seen[key] then
          bad[#bad + 1] = ("tile %d k-iteration %d done by CTA %d and CTA %d"):format(u.tile, k, seen[key], c)
        end
        seen[key] = c
      end
      ranges[u.tile] = ranges[u.tile] or {}
      table.insert(ranges[u.tile], u)
    end
  end
  local reduce = s.mode == "reduce"
  for t = 0, s.tiles - 1 do
    local rs = ranges[t] or {}
    table.sort(rs, function(x, y) return x.k_begin < y.k_begin end)
    local at, epilogues = 0, 0
    for j, u in ipairs(rs) do
      local what = ("tile %d: k-range %d..%d"):format(t, u.k_begin, u.k_end)
      if u.k_begin ~= at then bad[#bad + 1] = ("%s starts where the one before ends, at %d"):format(what, at) end
      at = u.k_end
      if u.epilogue then epilogues = epilogues + 1 end
      if not reduce and u.wait and j > 1 and cta[rs[j - 1]] >= cta[u] then
        bad[#bad + 1] = ("%s (CTA %d) waits for CTA %d's k-range, not a lower-index CTA's: a grid larger than the device holds at once could hang"):format(
          what, cta[u], cta[rs[j - 1]])
      end
      if #rs > 1 and not reduce then
        if u.slot == nil or u.slot < 0 or u.slot >= s.slots then
          bad[#bad + 1] = ("%s has slot %s, outside the workspace's %d slots"):format(what, tostring(u.slot), s.slots)
        elseif (holder[u.slot] or t) ~= t then
          bad[#bad + 1] = ("%s has slot %d, which tile %d holds too"):format(what, u.slot, holder[u.slot])
        elseif u.slot ~= rs[1].slot then
          bad[#bad + 1] = ("%s has slot %d, but the tile's first k-range has slot %s"):format(what, u.slot, tostring(rs[1].slot))
        else
          holder[u.slot] = t
        end
      end
      if not reduce and u.wait ~= (j > 1) then
        bad[#bad + 1] = ("%s %s"):format(what, u.wait and "waits with nothing before it" or "does not wait for the partial before it")
      end
      if not reduce and u.publish ~= (j < #rs) then
        bad[#bad + 1] = ("%s %s"):format(what, u.publish and "publishes with no one after it" or "does not publish for the one after it")
      end
      if u.epilogue ~= (reduce and j == 1 or not reduce and j == #rs) then
        bad[#bad + 1] = ("%s %s"):format(what, u.epilogue and "writes the output but is not the last" or "is the last but writes no output")
      end
    end
    if at ~= s.k_tiles then bad[#bad + 1] = ("tile %d: k-iterations %d..%d done by no CTA"):format(t, at, s.k_tiles) end
    if epilogues ~= 1 then bad[#bad + 1] = ("tile %d: %d epilogues (one expected)"):format(t, epilogues) end
  end
  if reduce then
    for c = 0, s.ctas - 1 do
      local r0 = c - c % s.cluster
      if #per[c] ~= #per[r0] then
        bad[#bad + 1] = ("CTA %d does %d units but rank 0 of its cluster (CTA %d) does %d: a cluster sync would hang"):format(c, #per[c], r0, #per[r0])
      end
    end
  end
  local why = cycle(s, per, function(n)
    if reduce then
      local out, r0 = {}, n.c - n.c % s.cluster
      for p = r0, r0 + s.cluster - 1 do
        if p ~= n.c and per[p][n.i - 1] then out[#out + 1] = per[p][n.i - 1] end
      end
      return out
    end
    if not n.u.wait then return {} end
    for _, u in ipairs(ranges[n.u.tile]) do if u.k_end == n.u.k_begin then return { u } end end
    return {}
  end)
  if why then bad[#bad + 1] = why end
  return bad
end

return M
