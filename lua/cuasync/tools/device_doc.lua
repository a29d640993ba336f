-- docs/device.md from the device headers (kernels-src/cuasync/*.cuh): each header's opening
-- comment, then each public function with its C++ signature, the PTX it emits (the comment above
-- a wrapper names it, with its PTX ISA version and SM), or for a function built on wrappers the
-- wrappers it calls, and the SM it needs. The headers are the source: spec/house/docs_spec.lua checks
-- that the committed page is what this makes of them (`make docs` rewrites it).
--   device_doc.parse(dir) -> { headers = { { file, intro, needs, functions = { f... } } }, by_name }
--     f = { name, scope, signature, ptx = { {text, isa, sm} }, doc = {lines}, calls, sm, asm }
-- tools/device_doc_sm.lua derives the SM each function needs; tools/device_doc_md.lua renders.
local util = require("cuasync.util")
local fs = require("cuasync.fs")
local device_doc_sm = require("cuasync.tools.device_doc_sm")

local M = {}

-- The headers in the order a reader meets them (one concept each).
M.ORDER = { "arch", "mbarrier", "cp_async", "bulk", "tma", "cluster", "ring", "pipeline", "pipeline_cp_async", "order", "trace", "watchdog", "pdl", "graph", "warpgroup",
            "wgmma", "epilogue", "fastmath", "scheduler", "turnstile", "cuasync" }

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- The line without string and character literals and // comments (for counting braces).
local function code_of(line)
  local out, i, n = {}, 1, #line
  while i <= n do
    local c = line:sub(i, i)
    if c == "/" and line:sub(i + 1, i + 1) == "/" then break end
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n and line:sub(j, j) ~= c do j = j + (line:sub(j, j) == "\\" and 2 or 1) end
      out[#out + 1] = c .. c
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

local function ptx_of(comment)
  local isa, sm = comment:match("PTX ISA (%d+%.%d+), (sm_%w+)")
  if not isa then return nil end
  local text = trim(comment:gsub("PTX ISA.*$", ""):gsub("//%s*$", ""))
  return { text = text, isa = isa, sm = sm }
end

-- The arguments of a macro invocation "NAME(a, (b, c), "d")": top-level commas only.
local function args_of(text)
  local out, depth, cur, quoted = {}, 0, {}, false
  for ch in text:gmatch(".") do
    if ch == '"' then quoted = not quoted end
    if not quoted and (ch == "(") then depth = depth + 1 end
    if not quoted and (ch == ")") then depth = depth - 1 end
    if not quoted and depth == 0 and ch == "," then out[#out + 1] = trim(table.concat(cur)); cur = {}
    else cur[#cur + 1] = ch end
  end
  out[#out + 1] = trim(table.concat(cur))
  return out
end

-- A function-like macro's body, one source line per line, its parameters replaced by args; its
-- /* */ comments become // lines, so that the expansion reads like a header.
local function expand(macro, args)
  local lines, in_comment = {}, false
  for _, l in ipairs(macro.body) do
    l = l:gsub("%s*##%s*", "\1")   -- token pasting, kept apart from # (stringizing)
    for k, p in ipairs(macro.params) do
      local a = args[k] or ""
      if p == "..." then l = l:gsub("__VA_ARGS__", function() return table.concat(args, ", ", k) end)
      else
        l = l:gsub("#%s*" .. p .. "%f[^%w_]", function() return '"' .. a .. '"' end)
        l = l:gsub("%f[%w_]" .. p .. "%f[^%w_]", function() return a end)
      end
    end
    l = l:gsub("\1", ""):gsub("CUASYNC_UNPAREN%s*%((.-)%)", "%1")
    for k, p in ipairs(macro.params) do   -- ".Nd." in a comment: the instruction for this N
      if #p == 1 then l = l:gsub("%." .. p .. "d%.", function() return "." .. (args[k] or p) .. "d." end) end
    end
    local t = trim(l)
    if in_comment or t:match("^/%*") then
      local done = t:match("%*/%s*$")
      t = "// " .. trim(t:gsub("^/%*", ""):gsub("%*/%s*$", ""))
      in_comment = not done
    end
    lines[#lines + 1] = t
  end
  return lines
end

function M.parse(dir)
  local out = { headers = {}, by_name = {}, hidden = {} }
  for _, base in ipairs(M.ORDER) do
    local file = ("%s/cuasync/%s.cuh"):format(dir, base)
    local text, why = fs.read(file)
    if not text then util.fail("device_doc.parse", why .. " (make docs reads every header of device_doc.ORDER)") end
    local lines = {}
    if text ~= "" and text:sub(-1) ~= "\n" then text = text .. "\n" end
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    local h = { file = "cuasync/" .. base .. ".cuh", intro = {}, functions = {}, aliases = {} }
    local i = 1
    while lines[i] and lines[i]:match("^//") do   -- the opening comment
      local t = lines[i]:gsub("^//%s?", "")
      if i == 1 then t = t:gsub("^cuasync/[%w_]+%.cuh%s*[-—]+%s*", "") end
      h.intro[#h.intro + 1] = t
      i = i + 1
    end
    h.needs = table.concat(lines, "\n"):match('CUASYNC_REFUSE_HEADER%("[^"]+", "([^"]+)"%)')
    h.includes = {}
    for _, l in ipairs(lines) do
      local inc = l:match("^#include <cuasync/([%w_]+)%.cuh>")
      if inc then h.includes[#h.includes + 1] = inc end
    end
    h.base = base
    local st = { scopes = {}, depth = 0, comment = {}, template = nil, guard = {}, seen = {}, macros = {} }
    local function scope_name()
      local t = {}
      for _, s in ipairs(st.scopes) do if s.name ~= "cuasync" then t[#t + 1] = s.name end end
      return table.concat(t, "::")
    end
    local function private()
      for _, s in ipairs(st.scopes) do if s.private then return true end end
      return false
    end
    local function add(name, signature, body)
      local hidden = private()
      local scope = scope_name()
      local full = scope ~= "" and (scope .. "::" .. name) or name
      if st.seen[full .. "|" .. signature] then return end
      st.seen[full .. "|" .. signature] = true
      local fn = { name = full, scope = scope, signature = signature, ptx = {}, doc = {}, calls = {}, guard = st.guard[#st.guard] }
      local pending   -- a PTX line whose version (or operands) follow on the next comment line
      for _, c in ipairs(st.comment) do
        local p = ptx_of(c)
        local continues = pending and (c:match("^%s*[%[{]") or (p and p.text == ""))
        if continues then
          if p then pending.isa, pending.sm = p.isa, p.sm end
          local more = trim(p and p.text or c)
          if more ~= "" then pending.text = pending.text .. " " .. more end
          if p then pending = nil end
        elseif p then fn.ptx[#fn.ptx + 1] = p
        elseif #fn.doc == 0 and (c:match("^[%l][%w_]*%.[%w_.:]+%s*$") or c:match("^[%l][%w_]*%.%S*%s.*;%s*$")) then
          pending = { text = trim(c) }
          fn.ptx[#fn.ptx + 1] = pending
        else pending = nil; fn.doc[#fn.doc + 1] = c end
      end
      -- what the body calls; a call inside its own #if __CUDA_ARCH__ >= N is that target's
      -- path only (an older one takes another), so it does not raise the function's SM
      local called, arch = {}, {}
      for _, l in ipairs(body) do
        local t = trim(l)
        if t:match("^#if") then arch[#arch + 1] = t:match("__CUDA_ARCH__ >=") ~= nil
        elseif t:match("^#else") then arch[#arch] = false   -- the older targets' path: required
        elseif t:match("^#endif") then arch[#arch] = nil end
        local optional = false
        for _, a in ipairs(arch) do optional = optional or a end
        if l:match("asm%s+volatile") then fn.asm = true end
        for q in code_of(l):gmatch("([%a_][%w_:]*)%s*%(") do
          if not called[q] and q ~= name then
            called[q] = true
            fn.calls[#fn.calls + 1] = { name = q, optional = optional }
          end
        end
      end
      fn.header = h
      if hidden then out.hidden[#out.hidden + 1] = fn   -- resolved for the SM, not listed
      else h.functions[#h.functions + 1] = fn end
      out.by_name[full] = out.by_name[full] or fn
    end
    local function scan(src)
      local k = 1
      while k <= #src do
        local line = src[k]
        local code, t = code_of(line), trim(line)
        local inv = t:match("^([%u_][%u%d_]*)%(") and st.macros[t:match("^([%u_][%u%d_]*)%(")]
        if t:match("^#define%s") then      -- a macro: kept (a function-like one is expanded where used)
          local name, params = t:match("^#define%s+([%w_]+)%(([^)]*)%)")
          local body = {}
          while src[k]:match("\\%s*$") do
            k = k + 1
            body[#body + 1] = (src[k]:gsub("\\%s*$", ""))
          end
          if name then
            local ps = {}
            for p in params:gmatch("[^,]+") do ps[#ps + 1] = trim(p) end
            st.macros[name] = { params = ps, body = body, comment = st.comment }
          end
          st.comment = {}
        elseif inv and table.concat(inv.body, "\n"):match("__device__") then
          local comment = {}
          for _, c in ipairs(#st.comment > 0 and st.comment or inv.comment) do comment[#comment + 1] = c end
          st.comment = comment
          local ex = expand(inv, args_of(t:match("^[%w_]+%((.*)%)%s*$")))
          scan(ex)
          st.comment = {}
        elseif t:match("^//") then
          st.comment[#st.comment + 1] = t:gsub("^//%s?", "")
        elseif t:match("^#if.*__CUDA_ARCH__ >= (%d+)") then
          st.guard[#st.guard + 1] = "sm_" .. math.floor(tonumber(t:match("__CUDA_ARCH__ >= (%d+)")) / 10)
            .. (t:match("FEAT_SM90_ALL") and "a" or "")
        elseif t:match("^#if") then st.guard[#st.guard + 1] = st.guard[#st.guard] or false
        elseif t:match("^#endif") then st.guard[#st.guard] = nil
        elseif t:match("^#") then -- #else, #pragma, #include, #undef: nothing to document
        elseif t:match("^template") and not code:match("[{;]") then st.template = t
        elseif t:match("^namespace%s+[%w_]+%s*{") then
          local ns = t:match("^namespace%s+([%w_]+)")   -- a detail namespace is a header's own, undocumented
          st.scopes[#st.scopes + 1] = { name = ns, depth = st.depth, private = ns == "detail" }
          st.depth = st.depth + 1; st.comment = {}
        elseif t:match("^struct") and code:match("{%s*$") then
          local name = code:match("struct%s+__align__%(%d+%)%s+([%w_]+)") or code:match("struct%s+([%w_]+)")
          local tp = st.template and st.template:match("<%s*%a+%s+([%w_]+)") or nil
          if tp then name = name .. "<" .. tp .. ">" end
          st.scopes[#st.scopes + 1] = { name = name, struct = true, depth = st.depth }
          st.depth = st.depth + 1; st.comment = {}; st.template = nil
        elseif t:match("^using%s+[%w_:]+::[%w_]+%s*;") then   -- a name re-exported from another header
          local target, name = t:match("^using%s+([%w_:]+)::([%w_]+)")
          local scope = scope_name()
          h.aliases[#h.aliases + 1] = { name = (scope ~= "" and scope .. "::" or "") .. name, target = target .. "::" .. name }
        elseif t == "private:" then st.scopes[#st.scopes].private = true
        elseif t == "public:" then st.scopes[#st.scopes].private = false
        elseif line:match("__device__") and code:match("%(") then
          -- a function: its signature runs to the body's brace
          local sig, j = {}, k
          while true do
            local c = code_of(src[j])
            sig[#sig + 1] = trim(c:match("^(.-){") or c)
            if c:match("{") or c:match(";%s*$") then break end
            j = j + 1
          end
          local s = table.concat(sig, " "):gsub("__device__%s*", ""):gsub("__forceinline__%s*", "")
          s = s:gsub("__noinline__%s*", ""):gsub("CUASYNC_WATCHDOG_COLD%s*", ""):gsub("%s+", " ")   -- watchdog.cuh: one of the two
          s = trim(s:gsub("%)%s*:%s*[%w_]+%([^)]*%)%s*$", ")"))   -- a constructor's initializer list
          if st.template then s = st.template .. " " .. s end
          local name = s:match("([%a_][%w_]*)%s*%(")
          local body, d = {}, 0
          -- a declaration (no body, e.g. an extern the driver resolves) ends at its ';'
          local declaration = not code_of(src[j]):match("{") and code_of(src[j]):match(";%s*$")
          if declaration then body[1], k = src[j], j end
          for m = j, declaration and j - 1 or #src do
            local c = code_of(src[m])
            for ch in c:gmatch("[{}]") do d = d + (ch == "{" and 1 or -1) end
            body[#body + 1] = src[m]
            k = m
            if d <= 0 and c:match("}") then break end
          end
          if name and not s:match("^static constexpr") then add(name, s, body) end
          st.comment, st.template = {}, nil
        else
          for ch in code:gmatch("[{}]") do
            if ch == "{" then st.depth = st.depth + 1
            else
              st.depth = st.depth - 1
              local top = st.scopes[#st.scopes]
              if top and top.depth == st.depth then st.scopes[#st.scopes] = nil end
            end
          end
          st.comment = {}
          st.template = t:match("^template") and t or nil
        end
        k = k + 1
      end
    end
    local rest = {}
    for k = i, #lines do rest[#rest + 1] = lines[k] end
    scan(rest)
    out.headers[#out.headers + 1] = h
  end
  for _, h in ipairs(out.headers) do
    for _, a in ipairs(h.aliases) do out.by_name[a.name] = out.by_name[a.name] or out.by_name[a.target] end
  end
  device_doc_sm.derive(out)
  return out
end

return M
