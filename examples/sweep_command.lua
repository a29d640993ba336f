-- sweep_command.lua: a sweep script for the command, that also runs on its own.
--   bin/cuasync sweep examples/sweep_command.lua --param stages=2,4 --csv build/s.csv
--   luajit examples/sweep_command.lua
-- The command loads the script and runs the sweep it returns (a cuasync.sweep{...} or the table
-- cuasync.sweep takes); cuasync.sweep.main() tells the two apart. Its helpers are modules
-- (examples/lib/, put on the path by its first line whoever runs it). It sweeps
-- kernels-src/copy_bulk.cu's ring depth over 64 MiB, verified byte for byte, beside
-- cuMemcpyDtoD; with no GPU it compiles every variant and shows their registers and spills.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local copy = require("cuasync.kernels.copy")
local sweep = require("cuasync.tools.sweep")
local copy_data = require("example.copy")

local BYTES = 64 * 2 ^ 20
local buffers   -- made on first use: a compile worker never touches the GPU
local function data() buffers = buffers or copy_data(BYTES) return buffers end
local function opts(p) return { stages = p.stages, chunk = p.chunk } end

local S = cuasync.sweep{
  name = "sweep_command", rounds = 3, reps = 5,
  params = { stages = { 2, 4, 8 }, chunk = { 4096, 16384 } },
  where = function(p) local ok, err = pcall(copy.program, opts(p)) return ok, err end,
  program = function(p) return copy.program(opts(p)) end,
  build = function(p) local c = data() return copy.build(opts(p), { dst = c.dst, src = c.src, bytes = BYTES }) end,
  baseline = { name = "cuMemcpyDtoD", run = function() data().base.run() end, bytes = 2 * BYTES },
}
if not sweep.main() then return S end   -- `cuasync sweep` runs it, with its options
S:run():print()
