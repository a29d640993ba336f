-- Error kinds: the one home of cuasync's error objects. Each is a table with `kind` and `message`
-- (the text without a position) and the fields of its kind; tostring(err) is the text a user
-- sees, the position error() would put in front (`file.lua:12: `) included where the error names
-- the user's line, and string methods (err:find, err:match) work on that text, so code written
-- when errors were strings keeps working. Pure Lua: util.lua, and so model/, raises through it.
--   driver     a failed driver call (native.driver_error): code, status, sticky, where
--   hang       a watched kernel's post-mortem (hang.lua): kernel, block, warp, barrier, ...; err:explain()
--   cancelled  a watched kernel cancelled from the host (cancel.lua): cause, elapsed_ms, kernels
--   compile    NVRTC refused a program (compiler.lua): name, arch, log, source, options, lines
--   plan       a plan refused: any refusal of cuasync.pipeline{...}, cuasync.scheduler{...} or their methods
--   timeout    a wait past its timeout_ms on work that could not be cancelled (no watchdog, or
--              not in a watched wait): the GPU is still busy with it (elapsed_ms, watched)
-- errors.kind(err) tells them apart (nil for a string or a foreign table), so a caller tests a
-- kind instead of matching message text.
local M = {}

M.KINDS = { "compile", "plan", "driver", "hang", "cancelled", "timeout" }

local kind_of = {}   -- metatable -> kind

-- A class of error objects: returns the prototype (its kind and methods; hang.lua adds Hang's
-- explain) and the metatable its objects carry.
local function class(kind)
  local proto = { kind = kind }
  local mt = {
    __index = function(_, k)
      local v = proto[k]
      if v ~= nil then return v end
      local f = string[k]
      if f then return function(self, ...) return f(tostring(self), ...) end end
    end,
    __tostring = function(e) return (e.position or "") .. e.message end,
    __concat = function(a, b) return tostring(a) .. tostring(b) end,
  }
  kind_of[mt] = kind
  return proto, mt
end

local mts = {}
M.DriverError, mts.driver = class("driver")
M.Hang, mts.hang = class("hang")
M.Cancelled, mts.cancelled = class("cancelled")
M.CompileError, mts.compile = class("compile")
M.PlanError, mts.plan = class("plan")
M.Timeout, mts.timeout = class("timeout")

-- The kind of e: "compile" | "plan" | "driver" | "hang" | "cancelled" | "timeout", or nil for anything else
-- (a string, a table cuasync did not make, a protocol fault of the CPU model).
function M.kind(e)
  if type(e) ~= "table" then return nil end
  return kind_of[getmetatable(e)]
end

-- e's text without the position error() put in front of it: an error object's message, or a
-- string's text after its first "file.lua:N: ".
function M.message(e)
  if M.kind(e) then return e.message end
  return (tostring(e):gsub("^[^\n]-%.lua:%d+: ", ""))
end

-- fields (a table with message, and position where the text names the user's line) as an
-- error object of `kind`; returns it (raise it with error(err, 0)).
function M.new(kind, fields)
  local mt = mts[kind]
  if not mt then error(("cuasync.errors.new: kind must be one of %s (got %s)"):format(table.concat(M.KINDS, ", "),
                       tostring(kind)), 2) end
  if type(fields.message) ~= "string" then error("cuasync.errors.new: fields.message must be a string", 2) end
  fields.kind = kind   -- also a field of its own, so pairs(err) and a copy keep it
  return setmetatable(fields, mt)
end

-- The predicates of the kinds that had them before errors.kind (cuasync.is_hang and the others).
function M.is_driver_error(e) return M.kind(e) == "driver" end
function M.is_hang(e) return M.kind(e) == "hang" end
function M.is_cancelled(e) return M.kind(e) == "cancelled" end

-- The calls whose refusals have a kind, by the first part of their name ("pipeline.simulate"):
-- every refusal of a pipeline plan, its construction and its methods, is a "plan" refusal (a
-- sweep prunes the point; util.fail raises it as an object).
M.CALLS = { pipeline = "plan", scheduler = "plan", layout = "plan" }

function M.of_call(where)
  return M.CALLS[where:match("^[^.]*")]
end

return M
