-- docs/device.md, written from what tools/device_doc.lua parses of the device headers.
--   device_doc_md.render(parsed) -> the markdown text
--   device_doc_md.write(path[, dir]) -> path (dir: the kernels-src directory)
local util = require("cuasync.util")
local fs = require("cuasync.fs")
local device_doc = require("cuasync.tools.device_doc")

local M = {}

function M.render(parsed)
  local o = { "# Device headers", "",
    "Every program can `#include <cuasync/...>` (NVRTC, no host headers). One concept per header;",
    "each wrapper is a short free function that emits the PTX shown. **SM** is the least target it",
    "compiles for: below it, a wrapper is a stand-in that fails to compile, when used, with",
    "`cuasync: <name> needs <target>`. Functions built on wrappers list the ones they call.",
    "This page is generated from the headers (`make docs`); `spec/house/docs_spec.lua` keeps it in step.", "" }
  for _, h in ipairs(parsed.headers) do
    o[#o + 1] = ("- [`<%s>`](#%s)"):format(h.file, (h.file:gsub("[/.]", "")))
  end
  for _, h in ipairs(parsed.headers) do
    o[#o + 1] = ""
    o[#o + 1] = ("## `<%s>`"):format(h.file)
    o[#o + 1] = ""
    o[#o + 1] = (table.concat(h.intro, " "):gsub("%s+", " "))
    if h.needs then o[#o + 1] = ""; o[#o + 1] = ("The whole header needs %s."):format(h.needs) end
    for _, a in ipairs(h.aliases) do
      o[#o + 1] = ""
      o[#o + 1] = ("`%s` is [`%s`](#%s), reachable here too."):format(a.name, a.target, (a.target:gsub("[^%w_]", "")))
    end
    local groups, order = {}, {}   -- overloads together, in the order of their first definition
    for _, g in ipairs(h.functions) do
      if not groups[g.name] then groups[g.name] = {}; order[#order + 1] = g.name end
      table.insert(groups[g.name], g)
    end
    for _, name in ipairs(order) do
      local group, fn = groups[name], groups[name][1]
      o[#o + 1] = ""
      o[#o + 1] = ("### `%s`"):format(fn.name)
      o[#o + 1] = ""
      o[#o + 1] = "```cpp"
      for _, g in ipairs(group) do o[#o + 1] = g.signature end
      o[#o + 1] = "```"
      local shown, calls, sm, doc = {}, {}, false, {}
      for _, g in ipairs(group) do
        for _, p in ipairs(g.ptx) do
          local line = ("- PTX: `%s`%s"):format(p.text, p.isa and (" (PTX ISA %s, %s)"):format(p.isa, p.sm) or "")
          if not shown[line] then shown[line] = true; o[#o + 1] = line end
        end
        if #g.ptx == 0 then for _, c in ipairs(g.resolved or {}) do if not calls[c] then calls[c] = true; calls[#calls + 1] = "`" .. c .. "`" end end end
        if g.sm and (not sm or g.sm > sm) then sm = g.sm end
        if #g.doc > 0 then doc[#doc + 1] = (table.concat(g.doc, " "):gsub("%s+", " ")) end
      end
      if #calls > 0 then o[#o + 1] = "- Calls: " .. table.concat(calls, ", ") end
      o[#o + 1] = "- SM: " .. (sm or "any")
      local said = {}
      for _, d in ipairs(doc) do if not said[d] then said[d] = true; o[#o + 1] = ""; o[#o + 1] = d end end
    end
  end
  return table.concat(o, "\n") .. "\n"
end

function M.write(path, dir)
  local text = M.render(device_doc.parse(dir or "kernels-src"))
  local ok, why = fs.write(path, text)
  if not ok then util.fail("device_doc_md.write", why) end
  return path
end

return M
