-- Command-line options for the examples: parse(defaults, usage) reads `--name value` pairs into a
-- copy of defaults; a name defaults does not have, a missing value, or a non-number where the
-- default is a number prints usage and exits 2.
return function(defaults, usage)
  local opts = {}
  for k, v in pairs(defaults) do opts[k] = v end
  local i = 1
  while i <= #arg do
    local k = arg[i]:match("^%-%-(.+)$")
    local v = arg[i + 1]
    if not k or opts[k] == nil or v == nil or (type(opts[k]) == "number" and tonumber(v) == nil) then
      io.stderr:write("usage: " .. usage .. "\n")
      os.exit(2)
    end
    opts[k] = type(opts[k]) == "number" and tonumber(v) or v
    i = i + 2
  end
  return opts
end
