-- Several pipeline plans (and named regions of the kernel's own) in one block's dynamic shared
-- memory: where each starts, the alignment of the origin, the total, and the Config header that
-- names them. Pure Lua; cuasync.layout (layout.lua) wraps it.
local util = require("cuasync.util")
local cxx = require("cuasync.model.cxx_names")

local M = {}

local function fail(msg) util.fail("layout", msg) end
local function round_up(x, a) return math.ceil(x / a) * a end

M.REGION_ALIGN = 1024   -- a region may hold a swizzled tile or a TMA store's source

-- place{ name, pipelines = { P, ... }, regions = { { name, bytes }, ... } } -> the placement:
-- { name, parts = { { plan, offset, bytes } }, regions = { { name, offset, bytes } }, align,
--   used, slack, smem_bytes }. Each plan starts on a multiple of its own alignment (its stage
-- buffers and scratch assume that of their base); a region on 1024.
function M.place(o)
  local out = { name = o.name, parts = {}, regions = {}, align = 16 }
  local off = 0
  for i, P in ipairs(o.pipelines) do
    local bytes = P.smem_bytes - P.slack   -- the plan's own slack is the layout's to give once
    off = round_up(off, P.align)
    out.parts[i] = { plan = P, offset = off, bytes = bytes }
    off = off + bytes
    if P.align > out.align then out.align = P.align end
  end
  for i, r in ipairs(o.regions) do
    off = round_up(off, M.REGION_ALIGN)
    out.regions[i] = { name = r.name, offset = off, bytes = r.bytes }
    off = off + r.bytes
    if M.REGION_ALIGN > out.align then out.align = M.REGION_ALIGN end
  end
  out.used = off
  out.slack = out.align > 16 and out.align - 16 or 0
  out.smem_bytes = off + out.slack
  return out
end

-- The rules the parts must keep to share one kernel: one block shape, one cluster, distinct names
-- (each is a generated struct and header), no name twice across pipelines and regions.
-- Names the generated struct declares besides the regions' and pipelines' own: a region may
-- not take one (nor "ok": L:simulate's result has that field beside each plan's).
M.RESERVED = { align = true, smem_bytes = true, ok = true }

function M.check_parts(pipelines, regions)
  local seen, upper = {}, {}
  local first = pipelines[1]
  local fr = first.roles
  for i, P in ipairs(pipelines) do
    if seen[P.name] then fail(("pipelines[%d] is named '%s' like %s: each plan's Config is a struct of that name"):format(i, P.name, seen[P.name])) end
    if M.RESERVED[P.name] then
      fail(("pipelines[%d] is named '%s', a field of the layout's struct or of L:simulate's result: name the plan something else"):format(i, P.name))
    end
    local up = P.name:upper()
    if upper[up] then
      fail(("pipelines[%d] ('%s') and %s differ only in case: their defines (%s_STAGES, ...) would be one"):format(i, P.name, upper[up], up))
    end
    seen[P.name], upper[up] = ("pipelines[%d]"):format(i), ("pipelines[%d] ('%s')"):format(i, P.name)
    local r = P.roles
    if P.block ~= first.block or r.unified ~= fr.unified or r.producer_warps ~= fr.producer_warps
       or r.consumer_threads ~= fr.consumer_threads then
      local function roles(q)
        return q.roles.unified and ("unified, %d threads"):format(q.block)
          or ("%d producer warps + %d consumer threads"):format(q.roles.producer_warps, q.roles.consumer_threads)
      end
      fail(("pipelines[%d] ('%s') has roles %s but pipelines[1] ('%s') %s: one kernel has one block, so its pipelines need the same producer and consumer warps (a thread's role is the same in each)"):format(
        i, P.name, roles(P), first.name, roles(first)))
    end
    local a, b = P.cluster, first.cluster
    if P.cluster_size ~= first.cluster_size or a[1] ~= b[1] or a[2] ~= b[2] or a[3] ~= b[3] then
      fail(("pipelines[%d] ('%s') has cluster {%d, %d, %d} but pipelines[1] ('%s') {%d, %d, %d}: one kernel launches one cluster shape"):format(
        i, P.name, a[1], a[2], a[3], first.name, b[1], b[2], b[3]))
    end
  end
  for _, r in ipairs(regions) do
    if seen[r.name] then fail(("regions name '%s' twice (or as a pipeline, %s)"):format(r.name, seen[r.name])) end
    if M.RESERVED[r.name] then fail(("%s: the region name '%s' is a field of the layout's struct (or of L:simulate's result)"):format(r.at, r.name)) end
    seen[r.name] = r.at
  end
  -- the members each name generates: NAME_config for a plan; NAME_offset, NAME_bytes, NAME() for a region
  local member = {}
  for _, P in ipairs(pipelines) do member[P.name .. "_config"] = ("pipeline '%s'"):format(P.name) end
  for _, r in ipairs(regions) do
    member[r.name .. "_offset"], member[r.name .. "_bytes"] = ("region '%s'"):format(r.name), ("region '%s'"):format(r.name)
  end
  for _, r in ipairs(regions) do
    if member[r.name] then
      fail(("%s: the region name '%s' is also the member %s generates in the layout's struct"):format(r.at, r.name, member[r.name]))
    end
  end
end

-- The region list from { name = bytes, ... } (sorted by name: one order for one table) or
-- { { name, bytes }, ... } (the order given).
function M.regions(spec)
  if spec == nil then return {} end
  util.kind("layout", "regions", spec, "table")
  local out = {}
  local named = false
  for k in pairs(spec) do
    if type(k) ~= "number" then named = true end
  end
  if #spec > 0 and named then
    fail("regions is either a list { { name, bytes }, ... } or a table { name = bytes, ... }, not both in one table")
  end
  if #spec > 0 then
    for i, r in ipairs(spec) do
      util.kind("layout", ("regions[%d]"):format(i), r, "table")
      out[i] = { name = r[1] or r.name, bytes = r[2] or r.bytes, at = ("regions[%d]"):format(i) }
    end
  else
    for k, v in pairs(spec) do out[#out + 1] = { name = k, bytes = v, at = ("regions.%s"):format(tostring(k)) } end
    table.sort(out, function(x, y) return tostring(x.name) < tostring(y.name) end)
  end
  for _, r in ipairs(out) do
    if type(r.name) ~= "string" or not r.name:match("^[%a_][%w_]*$") or cxx.refusal(r.name) then
      fail(("%s: a region's name must be a C identifier that is not a C++ keyword (it names a member of the generated struct; got %s)"):format(
        r.at, util.describe(r.name)))
    end
    util.int_in("layout", r.at .. " (bytes)", r.bytes, 1, 2 ^ 20)
  end
  return out
end

-- The layout's Config: <cuasync/layouts/NAME.cuh>, with every part's header included.
function M.header(L)
  local lines = {
    ("// Generated by cuasync.layout '%s': where each pipeline and region of the kernel's dynamic shared"):format(L.name),
    "// memory starts. Every number is derived from the plans: edit the Lua layout, not this file.",
    "#pragma once",
    "#include <cuasync/pipeline.cuh>",
  }
  for _, p in ipairs(L.parts) do lines[#lines + 1] = ("#include <cuasync/pipelines/%s.cuh>"):format(p.plan.name) end
  lines[#lines + 1] = "namespace cuasync { namespace layouts {"
  lines[#lines + 1] = ("struct %s {"):format(L.name)
  lines[#lines + 1] = ("    static constexpr unsigned align = %du, smem_bytes = %du;   // with %d bytes of alignment slack"):format(
    L.align, L.smem_bytes, L.slack)
  for _, p in ipairs(L.parts) do
    lines[#lines + 1] = ("    typedef cuasync::pipelines::%s %s_config;   // at %d, %d bytes"):format(p.plan.name, p.plan.name, p.offset, p.bytes)
  end
  for _, r in ipairs(L.regions) do
    lines[#lines + 1] = ("    static constexpr unsigned %s_offset = %du, %s_bytes = %du;"):format(r.name, r.offset, r.name, r.bytes)
    lines[#lines + 1] = ("    __device__ static unsigned char *%s() { return cuasync::dynamic_smem<align>() + %s_offset; }"):format(r.name, r.name)
  end
  lines[#lines + 1] = "};"
  lines[#lines + 1] = "} }"
  return table.concat(lines, "\n") .. "\n"
end

-- The part whose barriers hold shared offset `off` from the layout's origin (hang.lua names a
-- hung wait's barrier with it), or nil.
function M.part_at(parts, off)
  for _, p in ipairs(parts) do
    if off >= p.offset and off < p.offset + p.bytes then return p end
  end
end

return M
