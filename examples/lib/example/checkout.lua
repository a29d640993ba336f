-- Puts this checkout's lua/ and build/ first on the module paths, so that an example runs from a
-- checkout (luajit examples/NAME.lua) as well as against an installed cuasync. Every example
-- requires it right after putting examples/lib/ on package.path (its first two lines).
local here = debug.getinfo(1, "S").source:match("^@(.*)/lib/example/[^/]*$") or "."   -- examples/
local root = here == "." and ".." or here:match("^(.*)/[^/]*$") or "."
for _, p in ipairs({ root .. "/lua/?/init.lua", root .. "/lua/?.lua" }) do
  if not package.path:find(p, 1, true) then package.path = p .. ";" .. package.path end
end
if not package.cpath:find(root .. "/build/?.so", 1, true) then package.cpath = root .. "/build/?.so;" .. package.cpath end
return root
