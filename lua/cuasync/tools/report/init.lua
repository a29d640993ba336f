-- A sweep's reports: one handler per format in this directory, loaded by name on first use
-- (report.write(S, "csv", path)). Each handler is a module with write(S, path[, opts]) -> path;
-- each but plot (gnuplot renders it) has render(S) -> the file's text.
local util = require("cuasync.util")
local common = require("cuasync.tools.report.common")

local M = { FORMATS = { "csv", "json", "plot", "t4", "text" } }
local known = {}
for _, f in ipairs(M.FORMATS) do known[f] = true end

-- The handler of a format: a named error for a format there is none for.
function M.handler(format)
  if type(format) ~= "string" or not known[format] then
    util.fail("sweep.write", ("no report format %s (formats: %s)"):format(util.describe(format), table.concat(M.FORMATS, ", ")))
  end
  return require("cuasync.tools.report." .. format)   -- lazy: one handler per format, loaded by name
end

function M.write(S, format, path, opts)
  return M.handler(format).write(S, path, opts)
end

M.fmt_value, M.params_text, M.figure, M.best = common.fmt_value, common.params_text, common.figure, common.best

return M
