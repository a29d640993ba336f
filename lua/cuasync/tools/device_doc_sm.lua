-- The least target each device-header function compiles for (tools/device_doc.lua parses them):
-- the highest SM of the PTX it emits and of the functions it calls, except calls on a newer
-- target's own path (inside #if __CUDA_ARCH__ >= N), raised to its #if guard and to its
-- header's floor (the header's own refusal, or that of a header it includes).
local M = {}

local function rank(sm) return tonumber((sm or ""):match("sm_(%d+)") or 0) + ((sm or ""):match("a$") and 0.5 or 0) end

function M.derive(out)
  local function resolve(fn, c)
    if out.by_name[c] then return out.by_name[c] end
    local scope = fn.scope
    while scope ~= "" do
      local g = out.by_name[scope .. "::" .. c]
      if g then return g end
      scope = scope:match("^(.*)::[^:]*$") or ""
    end
  end
  local function need(fn, stack)
    if fn.sm ~= nil then return fn.sm end
    if stack[fn] then return nil end
    stack[fn] = true
    local best
    for _, p in ipairs(fn.ptx) do if p.sm and rank(p.sm) > rank(best) then best = p.sm end end
    fn.resolved = {}
    for _, c in ipairs(fn.calls) do
      local g = resolve(fn, c.name)
      if g and g ~= fn then
        fn.resolved[#fn.resolved + 1] = g.name
        local s = need(g, stack)
        if s and not c.optional and rank(s) > rank(best) then best = s end
      end
    end
    if fn.guard and rank(fn.guard) > rank(best) then best = fn.guard end   -- inside #if __CUDA_ARCH__ >= N
    local floor = fn.header.floor
    if floor and rank(floor) > rank(best) then best = floor end          -- the header refuses below it
    fn.sm = best or false
    return fn.sm
  end
  -- a header's floor: its own refusal, or the highest of the headers it includes
  local by_base = {}
  for _, h in ipairs(out.headers) do by_base[h.base] = h end
  local function floor(h, seen)
    if h.floor ~= nil then return h.floor end
    seen = seen or {}
    seen[h] = true
    local best = h.needs and h.needs:match("^(sm_%w+)") or nil
    for _, inc in ipairs(h.includes) do
      local g = by_base[inc]
      if g and not seen[g] then
        local f = floor(g, seen)
        if f and rank(f) > rank(best) then best = f end
      end
    end
    h.floor = best or false
    return h.floor
  end
  for _, h in ipairs(out.headers) do floor(h) end
  for _, fn in ipairs(out.hidden) do need(fn, {}) end
  for _, h in ipairs(out.headers) do for _, fn in ipairs(h.functions) do need(fn, {}) end end
end

return M
