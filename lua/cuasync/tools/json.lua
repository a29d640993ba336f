-- The tools' JSON: the core's encoder and reader (lua/cuasync/json.lua, where fs.lua's sealed
-- format needs it), and decode_file for the callers that read a document from a path.
local json = require("cuasync.json")
local fs = require("cuasync.fs")

local M = { lib = json.lib, encode = json.encode, decode = json.decode }

-- The document in path, or nil and why ("cannot read PATH: ...", "empty: truncated",
-- "not JSON: <dkjson's message>").
M.decode_file = fs.read_json

return M
