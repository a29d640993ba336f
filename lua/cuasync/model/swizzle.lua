-- Where TMA puts each element of a box in shared memory, computed in Lua, so that a swizzled tile
-- can be read without guessing. Rows (box[1] elements) follow each other densely without a
-- swizzle; with one, each row takes the whole span S (a narrower row is padded: measured on the
-- H200, the padding is left untouched and the load's transaction count is the data bytes only).
-- The swizzle then XORs the 16-byte chunk index (byte-offset bits 4..) with the offset's bits
-- 7.. (the 128-byte line index), log2(S/16) bits of each — CUTLASS's Swizzle<1|2|3, 4, 3>. The
-- pattern repeats every 8 * S bytes, which is why the shared-memory destination must be aligned
-- to it (1024 bytes for 128B). spec/model/swizzle_spec.lua compares this model with what the hardware
-- writes, byte for byte.
--   local L = cuasync.swizzle.layout("128B", { 32, 16 }, 4)
--   L:offset(col, row)  -- byte offset of element (col, row), 0-based
--   L:at(byte)          -- col, row of the element whose bytes start there
--   print(cuasync.swizzle.show("128B", { 32, 16 }, 4))
local bit = require("bit")
local util = require("cuasync.util")

local M = {}

-- The one table of swizzle modes. SPAN: the bytes a row is swizzled within (0: none, rows are not
-- limited by a span). The rest are derived below, each with one meaning:
--   limit(mode)   the most a box row may hold (math.huge without a swizzle)
--   repeat_bytes(mode)  where the pattern repeats: 8 spans, the alignment a stage buffer needs
--                 (128 bytes without a swizzle: TMA's own destination alignment)
--   TENSORMAP[mode], WGMMA[mode]  the mode's code in a tensor map and in a wgmma descriptor
M.SPAN = { none = 0, ["32B"] = 32, ["64B"] = 64, ["128B"] = 128 }
M.TENSORMAP = { none = 0, ["32B"] = 1, ["64B"] = 2, ["128B"] = 3 }
M.WGMMA = { none = 0, ["128B"] = 1, ["64B"] = 2, ["32B"] = 3 }

function M.limit(mode)
  local s = M.SPAN[mode]
  return s > 0 and s or math.huge
end

function M.repeat_bytes(mode)
  local s = M.SPAN[mode]
  return s > 0 and 8 * s or 128
end
local ELEM = { [1] = true, [2] = true, [4] = true, [8] = true }

local function fail(where, msg) util.fail("swizzle." .. where, msg) end

local Layout = {}
Layout.__index = Layout

-- The shared-memory byte offset of a dense byte offset under this layout's swizzle.
function Layout:swizzle(o)
  if self.span == 0 then return o end
  local m = self.span / 16 - 1
  return bit.bxor(o, bit.lshift(bit.band(bit.rshift(o, 7), m), 4))
end

-- what: how the message names the pair ("col"/"row", or "cells[3][1] (col)" for bank_conflicts)
local function cell(L, where, col, row, what)
  local c, r = what and (what .. "[1] (col)") or "col", what and (what .. "[2] (row)") or "row"
  if not util.is_integer(col) or col < 0 or col >= L.cols then
    fail(where, ("%s must be an integer in 0..%d, the box's columns (got %s)"):format(c, L.cols - 1, util.describe(col)))
  end
  if not util.is_integer(row) or row < 0 or row >= L.rows then
    fail(where, ("%s must be an integer in 0..%d, the box's rows (got %s)"):format(r, L.rows - 1, util.describe(row)))
  end
end

-- The swizzled byte offset of a checked cell.
local function place(L, col, row) return L:swizzle(row * L.pitch + col * L.elem_bytes) end

function Layout:offset(col, row)
  cell(self, "offset", col, row)
  return place(self, col, row)
end

-- The element stored at shared-memory byte `byte` (the swizzle is its own inverse), or nil past the box.
function Layout:at(byte)
  if not util.is_integer(byte) or byte < 0 then
    fail("at", ("byte must be a non-negative integer (got %s)"):format(util.describe(byte)))
  end
  local o = self:swizzle(byte)
  if o < 0 or o >= self.bytes then return nil end
  local row = math.floor(o / self.pitch)
  local rest = o - row * self.pitch
  if rest >= self.row_bytes then return nil end   -- padding
  return math.floor(rest / self.elem_bytes), row, rest % self.elem_bytes
end

-- The worst bank conflict (how many distinct 4-byte words one bank must serve) when 32 threads
-- read the elements `cells` ({ {col, row}, ... }) at once.
function Layout:bank_conflicts(cells)
  util.list("swizzle.bank_conflicts", "cells", cells)
  for i, c in ipairs(cells) do
    if type(c) ~= "table" then
      fail("bank_conflicts", ("cells[%d] must be a table {col, row} (got %s)"):format(i, type(c)))
    end
    cell(self, "bank_conflicts", c[1], c[2], ("cells[%d]"):format(i))
  end
  local words, worst = {}, 0
  for _, c in ipairs(cells) do
    local w = math.floor(place(self, c[1], c[2]) / 4)   -- checked above
    local bank = w % 32
    words[bank] = words[bank] or {}
    if not words[bank][w] then
      words[bank][w] = true
      words[bank].n = (words[bank].n or 0) + 1
      if words[bank].n > worst then worst = words[bank].n end
    end
  end
  return worst
end

local function check(where, mode, box, elem_bytes)
  if type(mode) ~= "string" or M.SPAN[mode] == nil then
    fail(where, ("mode = %s is not one of 128B, 32B, 64B, none"):format(util.describe(mode)))
  end
  if type(box) ~= "table" or #box < 1 or #box > 5 then
    fail(where, "box must be a table of 1..5 positive integers (innermost first)")
  end
  util.list("swizzle." .. where, "box", box)
  for i = 1, #box do
    if not util.is_integer(box[i]) or box[i] < 1 or box[i] > 256 then
      fail(where, ("box[%d] = %s is outside 1..256"):format(i, util.describe(box[i])))
    end
  end
  if not ELEM[elem_bytes] then
    fail(where, ("elem_bytes = %s is not 1, 2, 4 or 8"):format(util.describe(elem_bytes)))
  end
  local row_bytes = box[1] * elem_bytes
  if row_bytes % 16 ~= 0 then
    fail(where, ("box[1] * elem_bytes = %d is not a multiple of 16"):format(row_bytes))
  end
  if M.SPAN[mode] > 0 and row_bytes > M.SPAN[mode] then
    fail(where, ("box[1] * elem_bytes = %d exceeds the %s swizzle span"):format(row_bytes, mode))
  end
  return row_bytes
end

-- layout(mode, box, elem_bytes) -> a layout: .mode .span .cols .rows .row_bytes (data per row)
-- .pitch (bytes per row in shared memory) .bytes (the footprint) .data_bytes and the methods above. Boxes of rank > 2 are rows of rows: rows = box[2] * box[3] * ...
local function layout(where, mode, box, elem_bytes)
  local row_bytes = check(where, mode, box, elem_bytes)
  local rows = 1
  for i = 2, #box do rows = rows * box[i] end
  local pitch = math.max(row_bytes, M.SPAN[mode])
  return setmetatable({ mode = mode, span = M.SPAN[mode], elem_bytes = elem_bytes, cols = box[1], rows = rows,
                        row_bytes = row_bytes, pitch = pitch, bytes = pitch * rows, data_bytes = row_bytes * rows },
                      Layout)
end

function M.layout(mode, box, elem_bytes) return layout("layout", mode, box, elem_bytes) end

-- show(mode, box, elem_bytes[, { rows = n, label = fn(col, row) }]) -> a string: one line per
-- shared-memory row of the box's row width, each cell the column (or label) of the element
-- stored there. label defaults to the column, so the rows of a matrix whose rows hold 0..N-1
-- read exactly as TMA writes them.
-- At most SHOW_ROWS rows are drawn unless opts.rows asks for more (a 5D box has up to 2^32 rows).
M.SHOW_ROWS = 64
function M.show(mode, box, elem_bytes, opts)
  local L = layout("show", mode, box, elem_bytes)
  opts = opts or {}
  util.kind("swizzle.show", "opts", opts, "table")
  util.known_fields("swizzle.show", opts, { rows = true, label = true })
  if opts.rows ~= nil then util.int_in("swizzle.show", "opts.rows", opts.rows, 1, 4096) end
  if opts.label ~= nil then util.kind("swizzle.show", "opts.label", opts.label, "function") end
  local label = opts.label or function(col) return col end
  local nrows = math.min(opts.rows or M.SHOW_ROWS, L.rows)
  local width = #tostring(label(L.cols - 1, L.rows - 1))
  local out = { ("%s swizzle, box {%s}, %d-byte elements: shared-memory row r, slot k holds column"):format(
    mode, table.concat(box, ", "), elem_bytes) }
  for r = 0, nrows - 1 do
    local cells = {}
    for k = 0, L.pitch / elem_bytes - 1 do
      local col, row = L:at(r * L.pitch + k * elem_bytes)
      cells[#cells + 1] = ("%" .. width .. "s"):format(col and tostring(label(col, row)) or "-")
    end
    out[#out + 1] = ("%3d | %s"):format(r, table.concat(cells, " "))
  end
  if nrows < L.rows then
    out[#out + 1] = ("... %d more rows (opts.rows shows up to 4096)"):format(L.rows - nrows)
  end
  return table.concat(out, "\n")
end

util.methods(Layout, "layout", "L")

return M
