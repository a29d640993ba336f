-- Kernel signatures: parsing and every malformed one refused with its message.
local cuasync = require("cuasync")

describe("cuasync.signature", function()
  it("parses every type with its size", function()
    local p = cuasync.signature(" ptr,i32 , u32, i64, u64, f32, f64, tensormap, bytes[24] ")
    local kinds, sizes = {}, {}
    for i, x in ipairs(p) do kinds[i], sizes[i] = x.kind, x.size end
    assert.same({ "ptr", "i32", "u32", "i64", "u64", "f32", "f64", "tensormap", "bytes" }, kinds)
    assert.same({ 8, 4, 4, 8, 8, 4, 8, 128, 24 }, sizes)
  end)

  it("takes an empty signature as no parameters", function()
    assert.same({}, cuasync.signature(""))
  end)

  local cases = {
    { nil, 'cuasync.kernel: signature must be a string such as "ptr, ptr, u64" (got nil)' },
    { "ptr, foo", 'cuasync.kernel: signature "ptr, foo": unknown type \'foo\' at position 2 (types: ptr, i32, u32, i64, u64, f32, f64, tensormap, cond, bytes[N])' },
    { "ptr,,u32", 'cuasync.kernel: signature "ptr,,u32": empty type at position 2' },
    { "ptr,", 'cuasync.kernel: signature "ptr,": empty type at position 2' },
    { "bytes[0]", 'cuasync.kernel: signature "bytes[0]": bytes[0] at position 1 must hold 1..32764 bytes' },
    { "bytes[40000]", 'cuasync.kernel: signature "bytes[40000]": bytes[40000] at position 1 must hold 1..32764 bytes' },
    { "bytes[-1]", 'cuasync.kernel: signature "bytes[-1]": unknown type \'bytes[-1]\' at position 1 (types: ptr, i32, u32, i64, u64, f32, f64, tensormap, cond, bytes[N])' },
    { "int", 'cuasync.kernel: signature "int": unknown type \'int\' at position 1 (types: ptr, i32, u32, i64, u64, f32, f64, tensormap, cond, bytes[N])' },
    { "bytes[20000], bytes[20000]", 'cuasync.kernel: signature "bytes[20000], bytes[20000]": parameters take 40000 bytes (at most 32764 per kernel)' },
  }
  for i, c in ipairs(cases) do
    it("rejects malformed signature " .. i, function()
      assert.has.error(function() cuasync.signature(c[1]) end, c[2])
    end)
  end
end)
