-- Placeholder until the errors module lands (issue 36 item 4).
local M = {}
function M.kind(e)
  if type(e) == "table" and type(e.kind) == "string" then return e.kind end
  if type(e) == "string" and e:find("cuasync%.pipeline[%.%w_]*: ") then return "plan" end
end
function M.message(e) return (tostring(e):gsub("^[^\n]-%.lua:%d+: ", "")) end
return M
