-- Every public declaration in native/*.h appears, token for token, in its cdef module: the FFI
-- never calls a function with a prototype the library does not have.
-- The pairs come from the names (native/cuasync_X.h <-> cuasync.cdef.X; cuasync.h <-> core): no
-- hand list to keep in step. And the module that calls a C function requires the cdef declaring it.
local INTERNAL = { ["cuasync_api.h"] = true }   -- never seen by Lua
local MODULES = {}
do
  local p = io.popen("ls native/*.h")
  for h in p:lines() do
    local name = h:match("native/(.*)")
    if not INTERNAL[name] then
      MODULES[name == "cuasync.h" and "core" or name:match("^cuasync_(.*)%.h$")] = name
    end
  end
  p:close()
end

local function declarations(text)
  text = text:gsub("/%*.-%*/", ""):gsub("#ifdef CUASYNC_INTERNAL.-#endif", "")
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    if not l:match("^%s*#") then lines[#lines + 1] = l end
  end
  local set = {}
  for d in table.concat(lines, " "):gmatch("([^;]+);") do
    d = d:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
    if d ~= "" then set[d] = true end
  end
  return set
end

describe("cdef modules", function()
  it("cover every native header, one cdef module each, and no more", function()
    local n = 0
    for mod, header in pairs(MODULES) do
      local f = io.open("lua/cuasync/cdef/" .. mod .. ".lua")
      assert.truthy(f, header .. " has no cdef module lua/cuasync/cdef/" .. mod .. ".lua")
      f:close()
      n = n + 1
    end
    local p = io.popen("ls lua/cuasync/cdef/*.lua")
    for f in p:lines() do assert.truthy(MODULES[f:match("([%w_]+)%.lua$")], f .. " has no native header") end
    p:close()
    assert.is_true(n >= 16)
  end)

  it("each module that calls a C function requires the cdef module declaring it", function()
    local declared = {}   -- C name -> cdef module
    for mod in pairs(MODULES) do
      for name in require("cuasync.cdef." .. mod):gmatch("([%w_]+)%s*%(") do declared[name] = declared[name] or mod end
      for name in require("cuasync.cdef." .. mod):gmatch("(CUASYNC_[%w_]+)") do declared[name] = declared[name] or mod end
    end
    local p = io.popen("find lua/cuasync bin -type f -name '*.lua' -o -type f -name cuasync")
    local checked = 0
    for f in p:lines() do
      if not f:find("/cdef/", 1, true) then
        local h = assert(io.open(f))
        local src = h:read("*a")
        h:close()
        for name in src:gmatch("C%.([%w_]+)") do
          local mod = declared[name]
          if mod then
            checked = checked + 1
            assert.truthy(src:find('require%("cuasync%.cdef%.' .. mod .. '"%)'),
              f .. " calls C." .. name .. " but does not require cuasync.cdef." .. mod)
          end
        end
      end
    end
    p:close()
    assert.is_true(checked > 50)
  end)

  for mod, header in pairs(MODULES) do
    it("cuasync.cdef." .. mod .. " matches native/" .. header, function()
      local f = assert(io.open("native/" .. header))
      local want = declarations(f:read("*a"))
      f:close()
      local have = declarations(require("cuasync.cdef." .. mod))
      local n = 0
      for d in pairs(want) do
        assert.is_true(have[d] ~= nil, "missing from the cdef: " .. d)
        n = n + 1
      end
      for d in pairs(have) do assert.is_true(want[d] ~= nil, "not in the header: " .. d) end
      assert.is_true(n > 0)
    end)
  end
end)
