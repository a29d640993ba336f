-- Names that cuasync writes into generated C++ (a pipeline's struct and its load constants): a
-- name must be an identifier that is not a C++ keyword, not reserved to the implementation
-- (a double underscore anywhere, or _ and a capital first), and not a name the generated code
-- already uses. Pure Lua.
local M = {}

-- C++17 keywords and alternative tokens, and CUDA's own words a declaration cannot take.
local KEYWORDS = {}
for w in ([[alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
  char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
  co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern
  false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
  operator or or_eq private protected public register reinterpret_cast requires return short signed
  sizeof static static_assert static_cast struct switch template this thread_local throw true try
  typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
  __global__ __device__ __host__ __shared__ __constant__]]):gmatch("%S+") do KEYWORDS[w] = true end

-- Why `name` cannot be written as a C++ identifier, or nil.
function M.refusal(name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then return "is not a C identifier" end
  if KEYWORDS[name] then return "is a C++ keyword" end
  if name:find("__", 1, true) or name:match("^_%u") then
    return "is reserved to the compiler (a double underscore, or _ and a capital letter first)"
  end
  return nil
end

return M
