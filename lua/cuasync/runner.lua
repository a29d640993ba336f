-- Prepared runners: a function of exactly n arguments, generated so that LuaJIT compiles it
-- straight: each argument goes through its setter into its slot, then launch(). Inside
-- cuasync.graph's function (cstate.active) the arguments are also kept in state.args, so that
-- the graph node can keep what it reads alive and check it at launch; given outside, they are
-- not known there any more (state.args = nil: a capture of run() is then refused by name).
local M = {}

function M.make(n, setters, launch, not_packed, wrong_count, state, cstate)
  if n == 0 then
    return function(...)
      if select("#", ...) ~= 0 then wrong_count(select("#", ...)) end
      return launch()
    end
  end
  local names, sets, args = {}, {}, {}
  for i = 1, n do
    names[i], args[i], sets[i] = "s" .. i, "a" .. i, ("s%d(a%d)"):format(i, i)
  end
  local src = ([[
local launch, not_packed, wrong_count, state, cstate, %s = ...
return function(...)
  local n = select("#", ...)
  if n == 0 then
    if not state.packed then not_packed() end
    return launch()
  end
  if n ~= %d then wrong_count(n) end
  local %s = ...
  %s
  state.packed = true
  if cstate.active then state.args = { %s } else state.args = nil end
  return launch()
end]]):format(table.concat(names, ", "), n, table.concat(args, ", "), table.concat(sets, " "), table.concat(args, ", "))
  return assert(loadstring(src, "=cuasync.prepared"))(launch, not_packed, wrong_count, state, cstate, unpack(setters))
end

return M
