-- The guides in docs/ run. A fenced block opened with ```lua run needs no GPU and runs on every
-- machine (CI included); ```lua run gpu needs one. A guide's blocks run in order as one chunk (a
-- later block sees an earlier block's locals), with every other line of the page left blank so
-- that an error names the page's own line: without a GPU the CPU blocks alone, with one all of
-- them. Where a GPU block is skipped, its test is pending, counted, never passed.
local cuasync = require("cuasync")
local H = require("helper")

local GUIDES = { "first-pipeline", "cp-async", "clusters-and-multicast", "watchdog", "sweeps", "orchestration", "timeline",
                 "ordered-consumers", "schedulers", "shared-layouts", "attention" }

-- The page as a chunk of its runnable blocks: with_gpu = false keeps the CPU blocks only.
local function chunk(text, with_gpu)
  local out, mode, counts = {}, nil, { cpu = 0, gpu = 0 }
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if mode == nil then
      local info = line:match("^```lua run(.*)$")
      if info then
        mode = info:match("^%s*gpu%s*$") and "gpu" or (info:match("^%s*$") and "cpu") or error("unknown block mark: " .. line)
        counts[mode] = counts[mode] + 1
      end
      out[#out + 1] = ""
    elseif line:match("^```%s*$") then
      mode = nil
      out[#out + 1] = ""
    else
      out[#out + 1] = (mode == "cpu" or with_gpu) and line or ""
    end
  end
  assert(mode == nil, "a ```lua run block is not closed")
  return table.concat(out, "\n"), counts
end

-- Runs the page's chunk; what it prints is kept, and shown with an error.
local function run(name, with_gpu)
  local path = "docs/" .. name .. ".md"
  local src = chunk(H.read(path), with_gpu)
  local fn, err = load(src, "@" .. path)
  assert(fn, err)
  local printed, partial = {}, {}
  -- io.write is kept too, up to print's newline: on the real stdout a page's io.write without one
  -- ran into busted's next TAP line ("0:0 0:0 ... ok 414"), which the closing count then missed
  local page_io
  page_io = setmetatable({ write = function(...)   -- as io.write: returns the file, so writes chain
    local first = (select("#", ...) > 0 and (select(1, ...)) == page_io) and 2 or 1   -- page_io:write(...)
    for i = first, select("#", ...) do partial[#partial + 1] = tostring((select(i, ...))) end
    return page_io
  end }, { __index = io })
  setfenv(fn, setmetatable({ io = page_io, print = function(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    printed[#printed + 1] = table.concat(partial) .. table.concat(t, "\t")
    partial = {}
  end }, { __index = _G }))
  local ok, e = xpcall(fn, debug.traceback)
  if #partial > 0 then printed[#printed + 1] = table.concat(partial) end
  if not ok then error(("%s\n-- what the page printed:\n%s"):format(tostring(e), table.concat(printed, "\n")), 0) end
  return printed
end

describe("the guides in docs/", function()
  local gpu_it = H.gpu_it(it, pending)

  it("are the ones the README points to, each with blocks that run", function()
    local readme = H.read("README.md")
    for _, name in ipairs(GUIDES) do
      local _, counts = chunk(H.read("docs/" .. name .. ".md"), true)
      assert.truthy(counts.cpu + counts.gpu > 0, name .. ": no ```lua run block")
      assert.truthy(readme:find("docs/" .. name .. ".md", 1, true), "README does not point to docs/" .. name .. ".md")
    end
  end)

  it("number errors by the page's own lines", function()
    local src = chunk("text\n```lua run\nlocal a = 1\nerror('here')\n```\n", false)
    local ok, err = pcall(assert(load(src, "@docs/x.md")))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("docs/x.md:4:", 1, true), tostring(err))
  end)

  for _, name in ipairs(GUIDES) do
    it(name .. ".md: its CPU blocks run, and its GPU blocks compile", function()
      assert(load(chunk(H.read("docs/" .. name .. ".md"), true), "@docs/" .. name .. ".md"))
      run(name, false)
    end)
    gpu_it(name .. ".md: all its blocks run on the GPU", function() run(name, true) end)
  end
end)
