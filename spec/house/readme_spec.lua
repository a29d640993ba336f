-- README's "Ten lines" runs from a clone as README says: `luajit ten.lua` after
-- `eval "$(make env)"`, and `bin/cuasync run ten.lua`, from another directory. Without a GPU the
-- block is run up to its first launch need (its kernel compiled by NVRTC in this process), and the
-- two ways must get as far as the missing driver (the modules and the library were found).
local ffi = require("ffi")
local cuasync = require("cuasync")
local isolate = require("cuasync.tools.isolate")
local H = require("helper")

-- The first ```lua block under a "## " heading of README.md.
local function block(heading)
  local text = H.read("README.md")
  local at = assert(text:find("\n## " .. heading .. "\n", 1, true), "README has no section " .. heading)
  local code = text:match("\n```lua\n(.-)\n```\n", at)
  return assert(code, "README's " .. heading .. " has no ```lua block") .. "\n"
end

-- What the block prints last: x[0] after 3 warm-ups and 20 timed runs of x *= 3, in floats.
local function want_x()
  local f = ffi.new("float[1]", 1)
  for _ = 1, 23 do f[0] = f[0] * 3 end
  return f[0]
end

local ROOT = H.sh("pwd"):gsub("%s+$", "")

-- Runs a shell line in a fresh directory holding ten.lua, with PATH and the Lua paths as a
-- user's shell has them (none of this checkout's), and no make above it (under `make test`, a
-- make inherits MAKELEVEL and prints "Entering directory" on stdout): ok, output.
local function in_clone_user_shell(line)
  local dir = H.tmpdir()
  H.write(dir .. "/ten.lua", block("Ten lines"))
  local q = isolate.shell_quote
  -- a user's shell: no library chosen by hand (make asan sets CUASYNC_LIB to its own build)
  local ok, out = isolate.command(("cd %s && unset LUA_PATH LUA_CPATH MAKELEVEL MAKEFLAGS MFLAGS CUASYNC_LIB && %s"):format(q(dir), (line:gsub("ROOT", q(ROOT)))),
                                  { timeout_s = 300 })
  return ok, out
end

describe("README", function()
  local gpu_it = H.gpu_it(it, pending)

  it("make env prints the three exports for this checkout, nothing else on stdout", function()
    local ok, out = isolate.command("make -s --no-print-directory env 2>/dev/null")
    assert.is_true(ok, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.same({
      ("export LUA_PATH='%s/lua/?.lua;%s/lua/?/init.lua;'\"${LUA_PATH:-;}\""):format(ROOT, ROOT),
      ("export LUA_CPATH='%s/build/?.so;'\"${LUA_CPATH:-;}\""):format(ROOT),
      ("export PATH='%s/bin:'\"$PATH\""):format(ROOT),
    }, lines)
    -- from another directory, the checkout's modules, library and command are the ones found
    local ok2, out2 = in_clone_user_shell([[(cd ROOT && eval "$(make env 2>/dev/null)" && cd - >/dev/null &&
      luajit -e 'local c = require("cuasync") print(package.searchpath("cuasync", package.path)) print(c.library)' && command -v cuasync)]])
    assert.is_true(ok2, out2)
    assert.equal(("%s/lua/cuasync/init.lua\n%s/build/libcuasync.so\n%s/bin/cuasync\n"):format(ROOT, ROOT, ROOT), out2)
  end)

  it("Ten lines: the block loads, and its kernel compiles (no GPU needed)", function()
    local chunk = assert(load(block("Ten lines"), "=README.md"))
    -- the block runs against cuasync as it is, up to its first need of a GPU: prog:compile()
    local reached = false
    local fake = setmetatable({ program = function(spec)
      local prog = cuasync.program(spec)
      return setmetatable({ compile = function()
        prog:build()   -- NVRTC, no driver needed
        reached = prog:resources().scale ~= nil
        error("stop: compiled", 0)
      end }, { __index = prog })
    end }, { __index = cuasync })
    setfenv(chunk, setmetatable({ require = function(m) if m == "cuasync" then return fake end return require(m) end },
                                { __index = _G }))
    local ok, err = pcall(chunk)
    assert.is_false(ok)
    assert.equal("stop: compiled", err)
    assert.is_true(reached)
  end)

  for _, way in ipairs({ { "after eval \"$(make env)\": luajit ten.lua", [[(cd ROOT && eval "$(make env 2>/dev/null)" && cd - >/dev/null && luajit ten.lua)]] },
                         { "bin/cuasync run ten.lua", [[ROOT/bin/cuasync run ten.lua]] } }) do
    if H.gpu then
      gpu_it("Ten lines runs as written, " .. way[1] .. " #gpu", function()
        local ok, out = in_clone_user_shell(way[2])
        assert.is_true(ok, out)
        local ms, x = out:match("^([%d.e+-]+)\tms\n([%d.e+]+)\n$")
        assert.truthy(ms and tonumber(ms) > 0, out)
        assert.equal(want_x(), tonumber(x), out)
      end)
    else
      it("Ten lines gets as far as the missing driver, " .. way[1], function()
        local ok, out = in_clone_user_shell(way[2])
        assert.is_false(ok)
        assert.truthy(out:find("no CUDA driver", 1, true), out)
        assert.is_nil(out:find("module 'cuasync", 1, true), out)
      end)
    end
  end
end)
