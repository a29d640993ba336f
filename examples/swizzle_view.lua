-- swizzle_view.lua: how TMA lays a box of a float matrix into shared memory for each swizzle
-- mode, from the Lua model cuasync.swizzle (checked against the hardware byte for byte by
-- spec/model/swizzle_spec.lua). Every row of the matrix holds 0..N-1, so each printed cell is the
-- column that landed in that shared-memory slot; each mode's box is as wide as its span allows.
--   luajit examples/swizzle_view.lua [rows (16)]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")

local rows = cli.script{ args = { { "ROWS", "rows of each box", default = 16 } } }.rows
for _, mode in ipairs({ "32B", "64B", "128B" }) do
  local cols = cuasync.swizzle.SPAN[mode] / 4
  print(cuasync.swizzle.show(mode, { cols, rows }, 4))
  print(("(pattern repeats every %d bytes = %d rows of %d bytes)\n"):format(8 * cuasync.swizzle.SPAN[mode],
    8 * cuasync.swizzle.SPAN[mode] / (cols * 4), cols * 4))
end
