-- The public surface holds (DESIGN.md: a public name is never removed or renamed in one step): every
-- name pinned in spec/support/surface.txt (Lua names and methods, device-header functions with their
-- signatures) is still there with a compatible signature, or stays as a deprecated alias.
-- New names pass and are listed; `CUASYNC_SURFACE=update` pins them (and marks new aliases with
-- cuasync.version), but never drops a removed name: the spec then still fails.
-- The checks are shown to fail: on a module table with a name gone or its arity cut, and on a copy
-- of the device headers with a function renamed, a signature changed and an alias dropped.
local cuasync = require("cuasync")
local H = require("helper")
local S = require("support.surface")
local fs = require("cuasync.fs")
local util = require("cuasync.util")

local function pinned() return S.parse(assert(H.read(S.PIN), S.PIN .. " is missing")) end

local function only(entries, layer)
  local t = {}
  for _, e in ipairs(entries) do if e.layer == layer then t[#t + 1] = e end end
  return t
end

local function names(list, field)
  local t = {}
  for _, x in ipairs(list) do t[#t + 1] = (field and x[field] or x).name end
  table.sort(t)
  return t
end

describe("the public surface (spec/support/surface.txt)", function()
  it("keeps every pinned name, or a deprecated alias of it", function()
    local pin, current = pinned(), S.current()
    local r = S.compare(pin, current, cuasync.version)
    local notes = S.notes(r)
    if notes ~= "" then io.stderr:write("surface:\n  " .. notes:gsub("\n", "\n  ") .. "\n") end
    if os.getenv("CUASYNC_SURFACE") == "update" then
      local out = S.updated(pin, current, cuasync.version)
      assert(fs.write_atomic(S.PIN, S.format(out)))
      io.stderr:write(("surface: %s rewritten (%d lines)%s\n"):format(S.PIN, #out, r.ok and "" or "; removed and changed names kept: the spec still fails"))
    elseif #r.added > 0 then
      io.stderr:write(("surface: %d new names; `CUASYNC_SURFACE=update make test` pins them\n"):format(#r.added))
    end
    if not r.ok then error("the public surface lost names (spec/support/surface.txt):\n" .. S.explain(r), 0) end
    assert.truthy(#only(pin, "lua") > 250 and #only(pin, "device") > 150, "the pin holds too few names")
  end)

  it("pins the names docs_spec walks: the module's, the lazy ones, every method", function()
    local keys = {}
    for _, e in ipairs(pinned()) do keys[e.key] = e end
    for _, k in ipairs(S.lazy_names()) do assert.truthy(keys["cuasync." .. k], "cuasync." .. k) end
    for _, k in ipairs({ "cuasync.version", "cuasync.alloc", "cuasync.sweep.best", "cuasync.model.run", "Program:compile", "Sweep:run" }) do
      assert.truthy(keys[k], k)
    end
    assert.equal("string", keys["cuasync.version"].kind)
    assert.equal("function", keys["cuasync.alloc"].kind)
    assert.equal("(bytes)", keys["cuasync.alloc"].sig)
    local ring = keys["pipeline_ring<Stages>::producer_commit_cp_async | void producer_commit_cp_async(const state &st)"]
    assert.truthy(ring, "the ring's old producer_commit_cp_async is pinned")
    assert.equal("0.1.0", ring.deprecated)
  end)

  describe("fails on a planted change", function()
    -- The pin as CUASYNC_SURFACE=update would write it for this tree: the planted change is then
    -- the only difference, whether or not the committed pin lists the tree's newest names yet.
    local fresh
    local function pin_of(layer)
      fresh = fresh or S.updated(pinned(), S.current(), cuasync.version)
      return layer and only(fresh, layer) or fresh
    end

    it("Lua: a name gone, an arity cut, a kind changed; passes a util.deprecated alias", function()
      local pin = pin_of("lua")
      local methods = S.methods()
      local function check(edit)
        local fake = {}
        for _, k in ipairs(S.lazy_names()) do local _ = cuasync[k] end
        for k, v in pairs(cuasync) do fake[k] = v end
        edit(fake)
        return S.compare(pin, S.lua(fake, {}, nil, methods), cuasync.version)
      end
      local r = check(function(m) m.alloc = nil end)
      assert.is_false(r.ok)
      assert.same({ "cuasync.alloc" }, names(r.removed))
      assert.truthy(S.explain(r):find("removed: lua function cuasync.alloc (bytes)", 1, true), S.explain(r))

      r = check(function(m) m.tensormap = function() end end)
      assert.same({ "cuasync.tensormap" }, names(r.changed, "entry"))
      assert.truthy(r.changed[1].why:find("fewer parameters", 1, true), r.changed[1].why)

      -- a function become a table callable with its parameters passes (cuasync.graph, whose
      -- table holds graph.while_ ...); callable with fewer, it fails
      r = check(function(m) m.alloc = setmetatable({}, { __call = function(_, bytes) return bytes end }) end)
      assert.is_true(r.ok, S.explain(r))
      r = check(function(m) m.alloc = setmetatable({}, { __call = function() end }) end)
      assert.same({ "cuasync.alloc" }, names(r.changed, "entry"))
      assert.truthy(r.changed[1].why:find("fewer parameters", 1, true), r.changed[1].why)

      r = check(function(m) m.version = 1 end)
      assert.same({ "cuasync.version" }, names(r.changed, "entry"))
      assert.equal("was a string, is now a number", r.changed[1].why)

      -- renamed, with the old name kept as an alias: passes, the old name deprecated, the new one new
      r = check(function(m)
        m.new_alloc = m.alloc
        m.alloc = util.deprecated("cuasync.alloc", "cuasync.new_alloc", m.new_alloc)
      end)
      assert.is_true(r.ok, S.explain(r))
      assert.same({ "cuasync.alloc" }, names(r.deprecated))
      assert.same({ "cuasync.new_alloc" }, names(r.added))

      -- a method gone, and one given a parameter more (compatible)
      local fewer = {}
      for _, m in ipairs(methods) do
        if m.class == "Program" and m.name == "compile" then
        elseif m.class == "Sweep" and m.name == "run" then fewer[#fewer + 1] = { class = m.class, name = m.name, params = m.params .. ", extra" }
        else fewer[#fewer + 1] = m end
      end
      r = S.compare(pin, S.lua(cuasync, S.lazy_names(), nil, fewer), cuasync.version)
      assert.same({ "Program:compile" }, names(r.removed))
      assert.same({ "Sweep:run" }, names(r.widened, "entry"))
    end)

    -- a copy of the device headers, with ring.cuh edited
    local function headers(edit)
      local dir = H.tmpdir()
      assert(fs.mkdirs(dir .. "/cuasync"))
      local src = cuasync.kernels_dir() .. "/cuasync"
      for _, n in ipairs(assert(fs.list(src, ".cuh"))) do
        local text = assert(fs.read(src .. "/" .. n))
        if n == "ring.cuh" then
          local edited, count = edit(text)
          assert.truthy(count > 0, "the planted edit found nothing to change")
          text = edited
        end
        assert(fs.write(dir .. "/cuasync/" .. n, text))
      end
      return S.device(dir)
    end

    it("device: a function renamed, a signature changed, an alias dropped before its time", function()
      local pin = pin_of("device")
      local r = S.compare(pin, headers(function(t) return t:gsub("void producer_arrive%(", "void producer_signal(") end), cuasync.version)
      assert.is_false(r.ok)
      assert.same({ "pipeline_ring<Stages>::producer_arrive" }, names(r.removed))
      assert.same({ "pipeline_ring<Stages>::producer_signal" }, names(r.added))

      r = S.compare(pin, headers(function(t) return t:gsub("void init%(unsigned producers, unsigned consumers%)", "void init(unsigned producers)") end), cuasync.version)
      assert.same({ "pipeline_ring<Stages>::init" }, names(r.changed, "entry"))
      assert.equal("signature now void init(unsigned producers)", r.changed[1].why)

      -- the deprecated alias may leave only once a release has passed with it
      local drop = function(t) return t:gsub("\n%s*%[%[deprecated[^\n]*\n[^\n]*\n[^\n]*producer_commit_cp_async[^\n]*", "") end
      r = S.compare(pin, headers(drop), cuasync.version)
      assert.same({ "pipeline_ring<Stages>::producer_commit_cp_async" }, names(r.removed))
      assert.truthy(S.explain(r):find("deprecated in 0.1.0: it stays until a later release", 1, true), S.explain(r))
      r = S.compare(pin, headers(drop), "0.2.0")
      assert.is_true(r.ok, S.explain(r))
      assert.same({ "pipeline_ring<Stages>::producer_commit_cp_async" }, names(r.retired))
    end)

    it("device: a rename that keeps the old name as a [[deprecated]] alias passes", function()
      local pin = pin_of("device")
      local current = headers(function(t)
        return t:gsub("(\n%s*)(__device__ void )producer_arrive(%(const state &st%) )(%b{})",
          "%1%2producer_signal%3%4%1[[deprecated(\"use producer_signal\")]]%1// the old name%1%2producer_arrive%3{ producer_signal(st); }")
      end)
      local r = S.compare(pin, current, cuasync.version)
      assert.is_true(r.ok, S.explain(r))
      assert.same({ "pipeline_ring<Stages>::producer_arrive" }, names(r.deprecated))
      assert.same({ "pipeline_ring<Stages>::producer_signal" }, names(r.added))
      -- update pins the new name and marks the alias with this release
      local out = S.updated(pin, current, "0.3.0")
      local text = S.format(out)
      assert.truthy(text:find("device | cuasync/ring.cuh | pipeline_ring<Stages>::producer_arrive | void producer_arrive(const state &st) | deprecated 0.3.0\n", 1, true))
      assert.truthy(text:find("| pipeline_ring<Stages>::producer_signal | void producer_signal(const state &st)\n", 1, true))
      assert.truthy(text:find("producer_commit_cp_async(const state &st) | deprecated 0.1.0\n", 1, true))
    end)

    it("update keeps a removed or changed name in the pin, so the spec keeps failing", function()
      local pin = pin_of()
      local fake = {}
      for k, v in pairs(cuasync) do fake[k] = v end
      fake.alloc, fake.tensormap = nil, function() end
      local current = S.lua(fake, {}, nil, S.methods())
      for _, e in ipairs(only(S.current(), "device")) do current[#current + 1] = e end
      local out, r = S.updated(pin, current, cuasync.version)
      assert.is_false(r.ok)
      local again = S.compare(S.parse(S.format(out)), current, cuasync.version)
      assert.is_false(again.ok)
      assert.same({ "cuasync.alloc" }, names(again.removed))
      assert.same({ "cuasync.tensormap" }, names(again.changed, "entry"))
    end)
  end)

  it("the pin file reads back as written (sorted, one line per name, no duplicate)", function()
    local text = H.read(S.PIN)
    local pin = S.parse(text)
    local seen = {}
    for _, e in ipairs(pin) do
      assert.is_nil(seen[e.key], "twice: " .. e.key)
      seen[e.key] = true
    end
    assert.equal(text, S.format(pin))
    local ok, err = pcall(S.parse, "lua | function\n")
    assert.same({ false, S.PIN .. ":1: not a surface line: lua | function" }, { ok, err })
  end)
end)

describe("util.deprecated", function()
  it("calls through, and says once on stderr what replaces the old name", function()
    local said = {}
    local real = io.stderr
    local old = util.deprecated("cuasync.test_old_name", "cuasync.test_new_name", function(a, b) return a + b, "x" end)
    io.stderr = { write = function(_, s) said[#said + 1] = s end }
    local ok, a, b = pcall(old, 1, 2)
    local _ = pcall(old, 3, 4)
    io.stderr = real
    assert.is_true(ok)
    assert.same({ 3, "x" }, { a, b })
    assert.same({ "cuasync: cuasync.test_old_name is deprecated: use cuasync.test_new_name (the old name goes in a later release; see CHANGELOG.md)\n" }, said)
    assert.same({ old = "cuasync.test_old_name", new = "cuasync.test_new_name" }, util.deprecations[old])
    assert.has_error(function() util.deprecated("a", "b", 1) end)
  end)
end)
