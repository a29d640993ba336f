-- Every public declaration in native/*.h appears, token for token, in its cdef module: the FFI
-- never calls a function with a prototype the library does not have.
local MODULES = {
  types = "cuasync_types.h", core = "cuasync.h", error = "cuasync_error.h", loader = "cuasync_loader.h",
  device = "cuasync_device.h", memory = "cuasync_memory.h", compile = "cuasync_compile.h",
  module = "cuasync_module.h", launch = "cuasync_launch.h", stream = "cuasync_stream.h",
  event = "cuasync_event.h", hash = "cuasync_hash.h", fs = "cuasync_fs.h", tensormap = "cuasync_tensormap.h",
  nvtx = "cuasync_nvtx.h", blas = "cuasync_blas.h",
}

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
  it("cover every native header", function()
    local p = io.popen("ls native/*.h")
    for h in p:lines() do
      local name = h:match("native/(.*)")
      if name ~= "cuasync_api.h" and name ~= "cuasync_attrs.h" then   -- internal: never seen by Lua
        local found = false
        for _, header in pairs(MODULES) do found = found or header == name end
        assert.is_true(found, name .. " has no cdef module")
      end
    end
    p:close()
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
