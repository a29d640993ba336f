-- cuasync.trace.perfetto and cuasync.trace.svg: a timeline written as Chrome / Perfetto JSON
-- (decoded again and held to the format's rules) and as a self-contained SVG (well formed, names
-- escaped). Synthetic rings, no GPU; writes go through cuasync.fs, so a full disk raises.
local timeline = require("cuasync.model.timeline")
local perfetto = require("cuasync.trace.perfetto")
local svg = require("cuasync.trace.svg")
local dkjson = require("dkjson")
local json = require("cuasync.json")
local H = require("helper")

local NAME = "mma <&> \"q\" 'x'"

-- Per block: warps 0..consumers-1 consume, the last warp produces; 3 stages x `iterations`,
-- copies landing 300 ns after their issue, 200 ns of compute (warp 0 inside range 1, NAME).
local function raw_of(o)
  o = o or {}
  local raw = { kernel = "pipeline_tma", cap = 1024, lost = 0, slots = {}, names = { [1] = NAME } }
  for b = 0, (o.blocks or 1) - 1 do
    local prod, cons, ct, released, pt = {}, {}, {}, {}, 0
    local function ev(list, t, kind, f)
      f = f or {}
      f.t, f.kind = (o.base or 1e12) + 17 * b + t, kind
      list[#list + 1] = f
    end
    for c = 1, o.consumers or 2 do cons[c], ct[c] = {}, 0 end
    for i = 0, (o.iterations or 6) - 1 do
      local s = i % 3
      local we = math.max(pt, released[i - 3] or 0)
      ev(prod, pt, "wait_begin", { role = "producer", barrier = "empty", stage = s, parity = 0, iteration = i })
      ev(prod, we, "wait_end", { role = "producer", barrier = "empty", stage = s, parity = 0, iteration = i })
      ev(prod, we, "issue", { role = "producer", stage = s, iteration = i, bytes = 4096 })
      pt, released[i] = we + 10, 0
      for c, list in ipairs(cons) do
        local wend = math.max(ct[c], we + 300 + c)
        ev(list, ct[c], "wait_begin", { role = "consumer", barrier = "full", stage = s, parity = 1, iteration = i })
        ev(list, wend, "wait_end", { role = "consumer", barrier = "full", stage = s, parity = 1, iteration = i })
        if c == 1 then ev(list, wend, "range_begin", { id = 1 }) ev(list, wend + 200, "range_end", { id = 1 }) end
        ev(list, wend + 200, "release", { role = "consumer", barrier = "empty", stage = s, iteration = i })
        ct[c], released[i] = wend + 200, math.max(released[i], wend + 200)
      end
    end
    ev(cons[1], ct[1] + 1, "mark", { id = 3 })
    cons[#cons + 1] = prod
    for w, list in ipairs(cons) do
      raw.slots[#raw.slots + 1] = { block = { b, 0, 0 }, linear = b, sm = 42 + b, cluster_rank = 0, warp = w - 1,
                                    count = #list, lost = 0, events = list }
    end
  end
  return raw
end

-- The document as a reader of the file sees it: written with cuasync.json, read with dkjson.
local function decoded(T)
  local doc = dkjson.decode(json.encode(perfetto.document(T)))
  assert.is_table(doc)
  return doc
end

-- A tag-balance check of XML text: every element closed in order, no raw "<" or "&" in text or
-- attribute values. Returns the element names in document order.
local function well_formed(text)
  text = text:gsub("^<%?xml[^>]*%?>\n", "")
  local stack, names, pos = {}, {}, 1
  while true do
    local a, b, tag = text:find("(%b<>)", pos)
    local between = text:sub(pos, (a or #text + 1) - 1)
    assert.is_nil(between:find("<", 1, true), "a raw < in text")
    assert.is_nil(between:gsub("&%a+;", ""):gsub("&#%d+;", ""):find("&", 1, true), "a raw & in text: " .. between)
    if not a then break end
    local close, name, attrs, self = tag:match("^<(/?)([%w:_-]+)(.-)(/?)>$")
    assert.truthy(name, "not a tag: " .. tag)
    assert.is_nil(attrs:gsub('"[^"]*"', '""'):find("[<&]"), "a raw < or & in attributes: " .. tag)
    for v in attrs:gmatch('"([^"]*)"') do assert.is_nil(v:gsub("&%a+;", ""):gsub("&#%d+;", ""):find("[<&]"), tag) end
    if close == "/" then
      assert.equal(table.remove(stack), name)
    else
      names[#names + 1] = name
      if self == "" then stack[#stack + 1] = name end
    end
    pos = b + 1
  end
  assert.same({}, stack)
  return names
end

describe("cuasync.trace", function()
  describe("perfetto", function()
    it("a document that decodes and keeps the format's rules: X with ts and dur >= 0, named pids and tids, flows paired", function()
      local T = timeline.build(raw_of({ blocks = 2 }))
      local doc = decoded(T)
      assert.equal("ns", doc.displayTimeUnit)
      local procs, threads, starts, ends, xs, ids = {}, {}, {}, {}, {}, {}
      for _, e in ipairs(doc.traceEvents) do
        if e.ph == "M" and e.name == "process_name" then procs[e.pid] = e.args.name end
        if e.ph == "M" and e.name == "thread_name" then threads[e.tid] = { pid = e.pid, name = e.args.name } end
      end
      for i, e in ipairs(doc.traceEvents) do
        assert.is_string(e.ph)
        if e.ph ~= "M" then
          assert.is_number(e.ts)
          assert.truthy(procs[e.pid], "pid named: " .. tostring(e.pid))
          assert.equal(e.pid, threads[e.tid].pid)
        end
        if e.ph == "X" then
          assert.is_true(e.ts >= 0 and type(e.dur) == "number" and e.dur >= 0)
          xs[#xs + 1] = e
        elseif e.ph == "s" then
          assert.is_nil(starts[e.id])
          starts[e.id] = e
          local before = doc.traceEvents[i - 1]   -- right after its issue instant, which it binds to
          assert.same({ "i", "issue", e.ts, e.tid }, { before.ph, before.cat, before.ts, before.tid })
        elseif e.ph == "f" then
          assert.is_nil(ends[e.id])
          assert.equal("e", e.bp)
          ends[e.id] = e
        end
        if e.id then ids[e.id] = true end
      end
      assert.same({ [1042] = "SM 42", [1043] = "SM 43" }, procs)
      assert.same({ pid = 1042, name = "block 0 · warp 2 · producer" }, threads[3])
      assert.equal("block 1 · warp 0 · consumer", threads[4].name)
      assert.equal(12, #starts)
      for id, s in pairs(starts) do
        local f = assert(ends[id], "flow " .. id .. " finishes")
        assert.same({ s.name, s.cat }, { f.name, f.cat })   -- Perfetto keys a v1 flow on id, cat and name
        local inside = false   -- bound to an enclosing slice: a consumer wait on full
        for _, x in ipairs(xs) do
          if x.tid == f.tid and x.ts <= f.ts and f.ts <= x.ts + x.dur and x.args.barrier == "full" then inside = true end
        end
        assert.is_true(inside, "flow " .. id .. " ends inside a wait")
      end
      for id in pairs(ends) do assert.truthy(starts[id]) end
      -- times in µs from T.t0, to the nanosecond; args carry the wait's fields
      local w, x
      for _, s in ipairs(T.spans) do if s.kind == "wait" and s.track == 1 and s.iteration == 2 then w = s end end
      for _, e in ipairs(xs) do if e.tid == 1 and e.name == w.name then x = e end end
      assert.same({ w.name, w.t0 / 1000, (w.t1 - w.t0) / 1000 }, { x.name, x.ts, x.dur })
      assert.same({ barrier = "full", stage = 2, parity = 1, iteration = 2, role = "consumer" }, x.args)
      assert.same({ "pipeline_tma", "1000000000000", 1024, 0 },
                  { doc.otherData.kernel, doc.otherData.t0_ns, doc.otherData.cap, doc.otherData.lost })
    end)

    it("an open span is marked, a 64-bit t0 is written whole, and an empty timeline is still a list", function()
      local raw = raw_of({ base = 1700000000000000000ULL })
      table.remove(raw.slots[1].events)   -- the mark
      table.remove(raw.slots[1].events)   -- the last release
      table.remove(raw.slots[1].events)   -- the range's end
      local doc = decoded(timeline.build(raw))
      assert.equal("1700000000000000000", doc.otherData.t0_ns)
      local open = 0
      for _, e in ipairs(doc.traceEvents) do if e.ph == "X" and e.args.open then open = open + 1 end end
      assert.equal(1, open)
      local empty = json.encode(perfetto.document(timeline.build({ slots = {} })))
      assert.truthy(empty:find('"traceEvents":[{', 1, true), empty)
      assert.same({ "i", "g", "no events recorded" }, (function(d) local e = d.traceEvents[1] return { e.ph, e.s, e.name } end)(dkjson.decode(empty)))
    end)

    it("write: the file decodes to the document; a full disk raises by name, never wrote", function()
      local T = timeline.build(raw_of())
      local path = H.tmpdir() .. "/trace.json"
      assert.equal(path, perfetto.write(T, path))
      assert.same(decoded(T), dkjson.decode(H.read(path)))
      assert.has.error(function() perfetto.write(T, "/dev/full") end,
                       "cuasync.trace.perfetto: cannot write /dev/full: No space left on device")
      assert.has.error(function() perfetto.write(T, 3) end, "cuasync.trace.perfetto: path must be a string (got number)")
      assert.has.error(function() perfetto.document(raw_of()) end,
                       "cuasync.trace.perfetto: T must be a timeline from timeline.build(raw) (got a table with cap, kernel, lost, names, slots)")
    end)
  end)

  describe("svg", function()
    it("is well formed, names every track, escapes names, and gives each span a tooltip", function()
      local T = timeline.build(raw_of({ blocks = 2 }))
      local text = svg.text(T)
      local names = well_formed(text)
      assert.equal("svg", names[1])
      assert.truthy(text:find('<svg xmlns="http://www.w3.org/2000/svg" width="1200"', 1, true))
      for _, tr in ipairs(T.tracks) do assert.truthy(text:find(">" .. tr.name .. "</text>", 1, true), tr.name) end
      assert.truthy(text:find("mma &lt;&amp;&gt; &quot;q&quot; &#39;x&#39;", 1, true))
      assert.is_nil(text:find(NAME, 1, true))
      assert.truthy(text:find("<title>wait full[2] · stage 2 · it 2 · ", 1, true))
      assert.truthy(text:find("<title>issue stage 1 · it 4 · 4096 B</title>", 1, true))
      assert.truthy(text:find(">block 1 (SM 43)</text>", 1, true))
      assert.truthy(text:find(">0 µs</text>", 1, true))
      for _, l in ipairs({ "full wait", "empty wait", "other wait", "range", "issue", "mark" }) do
        assert.truthy(text:find(">" .. l .. "</text>", 1, true), l)
      end
      local diag = timeline.summary(T).diagnosis
      assert.truthy(text:find(diag:gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }), 1, true))
      -- a kernel name of markup is text
      T.kernel = "k<T&U>"
      assert.truthy(svg.text(T):find(">k&lt;T&amp;U&gt; · ", 1, true))
    end)

    it("draws the first `blocks` blocks and says how many it left out; an empty timeline is still a picture", function()
      local T = timeline.build(raw_of({ blocks = 3 }))
      local text = svg.text(T, { blocks = 2, width = 800 })
      well_formed(text)
      assert.truthy(text:find("showing 2 of 3 blocks", 1, true))
      assert.is_nil(text:find("block 2 (SM 44)", 1, true))
      assert.truthy(text:find('width="800"', 1, true))
      local empty = svg.text(timeline.build({ kernel = "k", slots = {} }))
      well_formed(empty)
      assert.truthy(empty:find(">no events recorded</text>", 1, true))
      assert.has.error(function() svg.text(T, { colour = 1 }) end, "cuasync.trace.svg: unknown field 'colour' (fields: blocks, width)")
      assert.has.error(function() svg.text(T, { width = 10 }) end, "cuasync.trace.svg: width must be an integer in 400..100000 (got 10)")
    end)

    it("write: the file holds the text; a full disk raises by name", function()
      local T = timeline.build(raw_of())
      local path = H.tmpdir() .. "/trace.svg"
      assert.equal(path, svg.write(T, path, { width = 900 }))
      assert.equal(svg.text(T, { width = 900 }), H.read(path))
      assert.has.error(function() svg.write(T, "/dev/full") end, "cuasync.trace.svg: cannot write /dev/full: No space left on device")
    end)
  end)
end)
