-- cuasync.sweep and the `cuasync` command. CPU: the cross product, pruning, every row kind, the
-- result cache (resume and force), CSV and JSON round trips, shards and merge, plots, parallel
-- compiles in worker processes, the command line and bad input — with host sweeps (host = true:
-- run() is host work) so that CI measures too. GPU: a sweep of real kernels where one variant
-- hangs (a row, with the watchdog's message) and the rest are measured; two measuring workers.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there
local sweep = require("cuasync.tools.sweep")
local report = require("cuasync.tools.report")
local csv = require("cuasync.tools.report.csv")
local plot = require("cuasync.tools.report.plot")

local function cache_dir()
  local d = H.tmpdir()
  return d
end

-- A host sweep: run() spins `n` iterations; build counts its calls.
local function host_sweep(extra)
  local calls = { build = 0 }
  local spec = {
    name = "host_spin", host = true, rounds = 2, reps = 3,
    params = { n = { 1000, 4000 }, kind = { "a", "b", "bad", "wrong" } },
    order = { "kind", "n" },
    where = function(p) if p.kind == "b" and p.n == 4000 then return false, "b is only tried small" end return true end,
    build = function(p)
      calls.build = calls.build + 1
      if p.kind == "bad" then error("no such variant") end
      if p.kind == "wrong" then return { run = 42 } end
      local acc = 0
      return { run = function() for i = 1, p.n do acc = acc + i end end, bytes = p.n * 8,
               verify = function() return p.n ~= 1000 or p.kind ~= "b", "b at 1000 is off by one" end }
    end,
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return sweep(spec), calls
end

describe("sweep", function()
  local gpu_it = H.gpu_it(it, pending)
  local old_dir

  before_each(function() old_dir = os.getenv("CUASYNC_CACHE_DIR") end)

  it("makes every point of the cross product a row: measured, pruned, failed", function()
    local S = host_sweep()
    assert.equal(8, #S:points())
    S:run{ quiet = true, force = true }
    assert.equal(8, #S.rows)
    local kinds = {}
    for _, r in ipairs(S.rows) do kinds[#kinds + 1] = r.kind end
    assert.same({ "measured", "measured", "failed", "pruned", "failed", "failed", "failed", "failed" }, kinds)
    local by = {}
    for _, r in ipairs(S.rows) do by[r.params.kind .. r.params.n] = r end
    assert.truthy(by.a4000.ms > 0 and by.a4000.gbps > 0)
    assert.is_true(by.a4000.verified)
    assert.equal("verification: b at 1000 is off by one", by.b1000.reason)
    assert.equal("b is only tried small", by.b4000.reason)
    assert.truthy(by.bad1000.reason:find("^build: .*no such variant"), by.bad1000.reason)
    assert.equal("build(p) returned no run function", by.wrong4000.reason)
    assert.truthy(S.best == by.a1000 or S.best == by.a4000)
    local text = S:text()
    assert.truthy(text:find("8 points: 2 measured, 1 pruned, 5 failed, 0 skipped", 1, true), text)
    assert.truthy(text:find("chart: GB/s", 1, true), text)
    assert.truthy(text:find("2 points (#5, #6) failed: build: ", 1, true), text)
  end)

  it("prunes on a pipeline plan's refusal, before any compile", function()
    local tm = cuasync.tensormap{ ptr = 256, bytes = 2 ^ 30, encode = false, dtype = "f32", dims = { 4096, 4096 }, box = { 256, 256 } }
    local compiled = 0
    local S = sweep{ name = "plan_prune", host = true, params = { loads = { 1, 5 } },
      program = function(p)
        local loads = {}
        for i = 1, p.loads do loads[i] = { map = tm, name = "m" .. i } end
        local P = cuasync.pipeline{ stages = 1, loads = loads, producer = { warps = 1 }, consumer = { warps = 1 } }
        compiled = compiled + 1
        return P:program{ source = '#include <cuasync/pipelines/main.cuh>\nextern "C" __global__ void k() {}' }
      end,
      build = function() return { run = function() end } end, rounds = 1, reps = 1 }
    S:run{ quiet = true, force = true, jobs = 1 }
    assert.equal("measured", S.rows[1].kind)
    assert.equal("pruned", S.rows[2].kind)
    assert.truthy(S.rows[2].reason:find("cuasync.pipeline: tx per stage is 1310720 bytes", 1, true), S.rows[2].reason)
    assert.equal(1, compiled)
    assert.truthy(S.rows[1].compile_ms)
  end)

  it("keeps measured rows: a second run measures only new points, force measures all", function()
    local ok, out = H.luajit([[
      package.path = "spec/?.lua;" .. package.path
      local sweep = require("cuasync.tools.sweep")
      local calls = 0
      local function make(ns)
        return sweep{ name = "resume", host = true, rounds = 1, reps = 1, params = { n = ns },
          build = function(p) calls = calls + 1 return { run = function() end, bytes = p.n } end }
      end
      -- builds beyond the measured points: the re-measured winners (at least one, at most 3)
      local function again(S) local n = 0 for _, r in ipairs(S.rows) do if r.remeasured then n = n + 1 end end return n end
      local S = make({ 1, 2 }):run{ quiet = true }
      print("FIRST", calls - again(S), again(S) >= 1, S.rows[1].cached, S.rows[2].cached)
      calls = 0
      S = make({ 1, 2, 3 }):run{ quiet = true }
      print("SECOND", calls, S.rows[1].cached, S.rows[3].cached, S.rows[1].kind)
      calls = 0
      S = make({ 1, 2, 3 }):run{ quiet = true, force = true }
      print("FORCE", calls - again(S), again(S) >= 1)
    ]], { CUASYNC_CACHE_DIR = cache_dir() })
    assert.is_true(ok, out)
    -- each run builds its fresh points, and each winner once more to re-measure it alone (only
    -- where more than one point was measured: the second run measured one)
    assert.truthy(out:find("FIRST\t2\ttrue\tnil\tnil", 1, true), out)
    assert.truthy(out:find("SECOND\t1\ttrue\tnil\tmeasured", 1, true), out)
    assert.truthy(out:find("FORCE\t3\ttrue", 1, true), out)
  end)

  it("sweep.best names the latest run's best verified row, or says why there is none", function()
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      print("NONE", sweep.best("ranked"))
      -- n = 3 is fastest but fails verification; n = 2 is the fastest verified
      local function make(ns)
        return sweep{ name = "ranked", host = true, rounds = 1, reps = 2, params = { n = ns, tag = { "a" } },
          build = function(p)
            local spin = ({ 400000, 20000, 2000, 200000 })[p.n]   -- long enough that a trace compile in a timed rep cannot reorder them
            return { run = function() local x = 0 for i = 1, spin do x = x + i end return x end,
                     verify = function() return p.n ~= 3, "planted" end }
          end }
      end
      make({ 1, 2, 3 }):run{ quiet = true }
      local params, row = sweep.best("ranked")
      print("BEST", params.n, params.tag, row.kind, row.verified, type(row.ms), row.params.n)
      -- which run it came from: the store read, the device, when, the run's rows, the row's key
      local dir = os.getenv("CUASYNC_CACHE_DIR")
      print("FROM", row.from.store == dir .. "/sweeps/ranked.json", row.from.device, row.from.rows, type(row.from.at),
            row.from.at == row.stored_at, row.from.key:match("^host|.*|n=2 tag=\"a\"$") ~= nil)
      -- the latest run decides: a run of n = 1 and 4 alone leaves n = 2 out
      make({ 1, 4 }):run{ quiet = true }
      params = sweep.best("ranked")
      print("LATEST", params.n)
      make({ 3 }):run{ quiet = true }
      print("UNVERIFIED", sweep.best("ranked"))
      print("NAME", pcall(sweep.best, "../x"))
      print("OPTS", pcall(sweep.best, "ranked", { gpu = 1 }))
      print("DEV", pcall(sweep.best, "ranked", { device = 0 }))
      -- a store whose runs are all of another device: which store, how many rows, whose runs
      local store = require("cuasync.tools.sweep.store")
      local st = store.load("ranked")
      st.runs["NVIDIA H200|12080"], st.runs.host = st.runs.host, nil
      store.save("other", { entries = st.entries, runs = st.runs })
      print("OTHER", sweep.best("other"))
      local f = io.open(os.getenv("CUASYNC_CACHE_DIR") .. "/sweeps/ranked.json", "w"); f:write("[1, 2"); f:close()
      print("DAMAGED", pcall(sweep.best, "ranked"))
    ]], { CUASYNC_CACHE_DIR = cache_dir(), CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    assert.truthy(out:find("NONE\tnil\tno stored results for sweep 'ranked' (none in ", 1, true), out)
    assert.truthy(out:find("BEST\t2\ta\tmeasured\ttrue\tnumber\t2", 1, true), out)
    assert.truthy(out:find("LATEST\t4", 1, true), out)
    assert.truthy(out:find("FROM\ttrue\thost\t2\tnumber\ttrue\ttrue", 1, true), out)   -- n = 3 failed its verify: not stored
    assert.truthy(out:find("UNVERIFIED\tnil\tthe latest run of sweep 'ranked' on host %([%d-]+ [%d:]+, read from [^\n]*/sweeps/ranked%.json%) has no verified measured row: it stored no measured row; rows that failed, were pruned or skipped are not stored %(S:print%(%) shows why%)\n"), out)
    assert.truthy(out:find("OTHER\tnil\tno run of sweep 'other' stored for host in [^\n]*/sweeps/other%.json: its %d+ rows are of runs on NVIDIA H200|12080 %(run it again here%)\n"), out)
    assert.truthy(out:find("NAME\tfalse\t[^\n]*cuasync.sweep.best: name \"../x\" is not a sweep name"), out)
    assert.truthy(out:find("OPTS\tfalse\t[^\n]*cuasync.sweep.best: unknown field 'gpu'"), out)
    assert.truthy(out:find("DEV\tfalse\t[^\n]*cuasync.sweep.best: opts.device must be a cuasync.device%(%) %(got 0%)"), out)
    assert.truthy(out:find("DAMAGED\ttrue\tnil\tthe result store [^\n]*ranked.json is not JSON of a sweep's store"), out)
    -- with the disk cache off, nothing is kept, and best says so
    ok, out = H.luajit([[print("OFF", require("cuasync.tools.sweep").best("ranked"))]],
                       { CUASYNC_CACHE_DIR = cache_dir(), CUASYNC_CACHE = "0", CUASYNC_CUDA_LIB = NOLIB })
    assert.is_true(ok, out)
    assert.truthy(out:find("OFF\tnil\tno stored results for sweep 'ranked': CUASYNC_CACHE=0 keeps none (the store would be ", 1, true), out)
  end)

  it("writes CSV and JSON that read back the same; shards merge into the whole", function()
    local dir = H.tmpdir()
    local S = host_sweep()
    S:run{ quiet = true, force = true }
    S:csv(dir .. "/s.csv")
    local recs = csv.read(dir .. "/s.csv")
    assert.same({ "index", "kind", "n", "kind", "verified", "ms" }, { recs[1][1], recs[1][2], recs[1][3], recs[1][4], recs[1][5], recs[1][6] })
    assert.equal(9, #recs)
    local col = {}
    for i, name in ipairs(recs[1]) do col[name] = col[name] or i end
    assert.equal("b is only tried small", recs[5][col.reason])
    assert.equal("measured", recs[2][4])
    S:json(dir .. "/s.json")
    local M = sweep.merge({ dir .. "/s.json" })
    assert.equal(8, #M.rows)
    for i, r in ipairs(M.rows) do
      assert.equal(S.rows[i].kind, r.kind)
      assert.equal(S.rows[i].reason, r.reason)
      assert.same(S.rows[i].params, r.params)
    end
    -- two shards cover the cross product once
    local A = host_sweep():run{ quiet = true, force = true, shard = "1/2" }
    local B = host_sweep():run{ quiet = true, force = true, shard = "2/2" }
    assert.equal(4, #A.rows)
    assert.equal(4, #B.rows)
    A:json(dir .. "/a.json")
    B:json(dir .. "/b.json")
    local J = sweep.merge({ dir .. "/a.json", dir .. "/b.json" })
    assert.equal(8, #J.rows)
    for i, r in ipairs(J.rows) do assert.equal(i, r.index) end
    assert.truthy(J:text():find("8 points:", 1, true))
  end)

  -- An SVG's text checked as XML: tags balanced and properly nested, attribute values quoted,
  -- text and values with no raw < or &; returns the elements by name.
  local function svg_elements(text)
    local stack, by = {}, {}
    local body = text:gsub("^<%?xml[^>]*%?>\n", "")
    local rest = body:gsub("([^<]*)(<[^>]*>)", function(txt, tag)
      assert.is_nil(txt:gsub("&[%w#]+;", ""):find("[&>]"), "raw text: " .. txt)
      local close, name, attrs, selfclose = tag:match("^<(/?)([%w:_-]+)(.-)(/?)>$")
      assert.truthy(name, "not a tag: " .. tag)
      local a = {}
      local left = attrs:gsub('%s+([%w:_-]+)="([^"]*)"', function(k, v)
        assert.is_nil(v:gsub("&[%w#]+;", ""):find("[<&]"), "raw value: " .. v)
        a[k] = v
        return ""
      end)
      assert.truthy(left:match("^%s*$"), "unquoted attribute in " .. tag)
      if close == "/" then
        assert.equal(table.remove(stack), name)
      else
        by[name] = by[name] or {}
        table.insert(by[name], a)
        if selfclose == "" then stack[#stack + 1] = name end
      end
      return ""
    end)
    assert.truthy(rest:match("^%s*$"), "text after the last tag")
    assert.same({}, stack)
    return by
  end

  it("draws a .svg in Lua: well formed, text escaped, one polyline per series with its points in x order", function()
    local dir = H.tmpdir()
    local S = host_sweep():run{ quiet = true, force = true }
    local path = S:plot(dir .. "/p.svg", { x = "n", y = "ms", series = "kind", title = 'spin <a> & "b"' })
    assert.equal(dir .. "/p.svg", path)
    local text = H.read(path)
    assert.truthy(text:find("<title>spin &lt;a&gt; &amp; &quot;b&quot;</title>", 1, true))
    local el = svg_elements(text)
    assert.equal("svg", text:match("<(svg) "))
    -- the series the rows give: kind=a at n = 1000 and 4000 (b at 1000 failed its check; bad and wrong failed)
    local want = {}
    for _, r in ipairs(S.rows) do
      if r.kind == "measured" and r.verified ~= false then
        local name = "kind=" .. r.params.kind
        want[name] = want[name] or {}
        want[name][#want[name] + 1] = { r.params.n, r.ms }
      end
    end
    local lines = {}
    for _, pl in ipairs(el.polyline) do if pl.class == "series" then lines[#lines + 1] = pl end end
    local names = {}
    for _, g in ipairs(el.g) do if g.class == "series" then names[#names + 1] = g["data-series"] end end
    local n = 0
    for name in pairs(want) do n = n + 1 end
    assert.equal(n, #lines)
    assert.equal(n, #names)
    for i, name in ipairs(names) do
      local pts = {}
      for px, py in lines[i].points:gmatch("([%d.]+),([%d.]+)") do pts[#pts + 1] = { tonumber(px), tonumber(py) } end
      local data = want[name]
      table.sort(data, function(a, b) return a[1] < b[1] end)
      assert.equal(#data, #pts, name)
      for j = 2, #pts do
        assert.is_true(pts[j][1] > pts[j - 1][1], name .. ": points out of x order")
        -- a larger value is drawn higher (a smaller y in SVG)
        if data[j][2] ~= data[j - 1][2] then assert.equal(data[j][2] > data[j - 1][2], pts[j][2] < pts[j - 1][2], name) end
      end
    end
    -- a .svg never needs gnuplot; the data and the script are beside it
    assert.truthy(H.read(dir .. "/p.dat") and H.read(dir .. "/p.gp"))
  end)

  it("draws a .png as SVG beside it where gnuplot is not installed, and says so; through gnuplot where it is", function()
    local dir = H.tmpdir()
    local S = host_sweep():run{ quiet = true, force = true }
    local real = plot.gnuplot
    plot.gnuplot = function() return nil end
    local ok, path, note = pcall(S.plot, S, dir .. "/p.png", { x = "n", series = "kind", log = "x" })
    plot.gnuplot = real
    assert.is_true(ok, path)
    assert.equal(dir .. "/p.svg", path)
    assert.equal(("gnuplot is not installed, so the chart is SVG (drawn in Lua) instead of %s/p.png; gnuplot %s/p.gp renders that"):format(dir, dir), note)
    assert.is_nil(note:find("\n"))
    assert.is_nil(io.open(dir .. "/p.png"))
    svg_elements(H.read(path))
    assert.truthy(H.read(dir .. "/p.gp"):find("set logscale x\n", 1, true))
    if plot.gnuplot() then
      assert.equal(dir .. "/q.png", S:plot(dir .. "/q.png", { x = "n", series = "kind" }))
      local f = assert(io.open(dir .. "/q.png", "rb"))
      assert.equal("\137PNG", f:read(4))
      f:close()
    end
    -- the SVG on a full disk is named like every other output
    H.sh("ln -s /dev/full " .. dir .. "/full.svg")
    assert.error_matches(function() S:plot(dir .. "/full.svg", { x = "n" }) end,
      "cuasync.sweep.plot: cannot write " .. H.literal(dir .. "/full.svg") .. ": No space left on device")
    assert.error_matches(function() S:plot(dir .. "/x.svg", { log = "z" }) end, 'log must be "x", "y" or "xy" %(got "z"%)')
  end)

  it("svg_chart: log axes tick at decades, bars are one rect per point, names escaped, bad input refused", function()
    local chart = require("cuasync.tools.report.svg_chart")
    local series = { { name = "a<b", points = { { 1, 10 }, { 10, 1000 }, { 100, 100000 } } }, { name = "c", points = { { 1, 5 }, { 100, 50 } } } }
    svg_elements(chart.render{ title = "t", xlabel = "x", ylabel = "y", series = series, log = "xy" })
    local text = chart.render{ series = series, log = "xy" }
    for _, tick in ipairs({ ">1<", ">10<", ">100<", ">1000<", ">10000<", ">100000<" }) do assert.truthy(text:find(tick, 1, true), tick) end
    assert.truthy(text:find('data-series="a&lt;b"', 1, true))
    local _, polylines = text:gsub("<polyline", "")
    assert.equal(2, polylines)
    -- log: the three points of a evenly spaced, each a decade up
    local pts = {}
    for px, py in text:match('<polyline[^>]-points="([^"]*)"'):gmatch("([%d.]+),([%d.]+)") do pts[#pts + 1] = { tonumber(px), tonumber(py) } end
    assert.is_true(math.abs((pts[2][1] - pts[1][1]) - (pts[3][1] - pts[2][1])) < 0.05)
    assert.is_true(math.abs((pts[1][2] - pts[2][2]) - (pts[2][2] - pts[3][2])) < 0.05)
    local bars = svg_elements(chart.render{ kind = "bars", series = { { name = "s", points = { { "128x128", 3 }, { "256x128", 4 } } },
                                                                        { name = "t", points = { { "128x128", 2 } } } } })
    local rects = 0
    for _, r in ipairs(bars.rect) do if r.class == "bar" then rects = rects + 1 end end
    assert.equal(3, rects)
    assert.error_matches(function() chart.render{ series = series, log = "q" } end, 'log must be "", "x", "y" or "xy"')
    assert.error_matches(function() chart.render{ series = series, kind = "pie" } end, 'kind must be "lines" or "bars"')
    assert.error_matches(function() chart.render{ series = { { name = "z", points = { { 1, 0 } } } }, log = "y" } end,
      "a log y axis needs values > 0 %(got 0 in series z%)")
    assert.error_matches(function() chart.render{ series = {} } end, "series is empty")
    assert.error_matches(function() chart.render{ series = { { name = "n", points = { { 1, 0 / 0 } } } } } end, "y must be a finite number")
  end)

  it("rejects bad input with a clear message, keeping rows already measured", function()
    local function bad(spec, pattern)
      local ok, err = pcall(sweep, spec)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(pattern, 1, true), tostring(err))
    end
    local b = function() return { run = function() end } end
    bad(nil, "cuasync.sweep: argument must be a table")
    bad({ name = "x", params = { n = {} }, build = b }, "params.n is empty: the cross product has no point")
    bad({ name = "x", params = {}, build = b }, "params must name at least one parameter")
    bad({ name = "x y", params = { n = { 1 } }, build = b }, "name \"x y\" is not a sweep name: letters, digits")
    bad({ name = "x", params = { n = { {} } }, build = b }, "params.n[1] must be a number, string or boolean")
    bad({ name = "x", params = { n = { 1 } } }, "build must be a function")
    bad({ name = "x", params = { n = { 1 } }, build = b, order = { "m" } }, "order names \"m\", which is not in params")
    bad({ name = "x", params = { n = { 1 } }, build = b, colour = 1 }, "unknown field 'colour'")
    bad({ name = "x", params = { n = { 1 } }, build = b, baseline = { name = "b" } }, "baseline.run must be a function")
    local S = host_sweep()
    assert.error_matches(function() S:set_param("m", { 1 }) end, 'unknown param "m" %(params: kind, n%)')
    assert.error_matches(function() S:run{ shard = "3/2" } end, 'shard must be "i/n"')
    S:run{ quiet = true, force = true }
    assert.error_matches(function() S:csv(H.missing("dir/x.csv")) end, "cuasync.sweep.csv: cannot write " .. H.literal(H.missing("dir/x.csv")))
    assert.error_matches(function() S:plot("x.jpg") end, "path must end in .png or .svg")
    assert.error_matches(function() S:plot("x.png", { x = "m" }) end, "x = \"m\" is not a parameter of the sweep")
    assert.equal(8, #S.rows)   -- nothing lost
  end)
end)

describe("sweep NVTX ranges", function()
  it("puts each variant's launches in a range named by the sweep and its params", function()
    if not cuasync.nvtx.enabled() then
      pending(cuasync.nvtx.why())
      return
    end
    local dir = H.tmpdir()
    local cuda = os.getenv("CUDA_HOME") or "/usr/local/cuda"
    assert.is_true(os.execute(("cc -shared -fPIC -isystem %s/include -o %s/rec.so spec/support/nvtx_record.c"):format(cuda, dir)) == 0)
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      sweep{ name = "nvtx_sweep", host = true, rounds = 1, reps = 2, params = { n = { 1, 2 } },
             build = function(p) return { run = function() end } end }:run{ quiet = true, force = true }
    ]], { NVTX_INJECTION64_PATH = dir .. "/rec.so", NVTX_RECORD = dir .. "/rec.txt", CUASYNC_CACHE_DIR = dir })
    assert.is_true(ok, out)
    local f = assert(io.open(dir .. "/rec.txt"))
    local rec = f:read("*a")
    f:close()
    local _, pushes1 = rec:gsub("push nvtx_sweep n=1\n", "")
    local _, pushes2 = rec:gsub("push nvtx_sweep n=2\n", "")
    local _, pops = rec:gsub("pop\n", "")
    -- each: the verified run and 2 timed reps; a winner 3 more, re-measured alone (the first
    -- always; the other too when the first falls behind it alone)
    assert.is_true((pushes1 == 3 or pushes1 == 6) and (pushes2 == 3 or pushes2 == 6) and pushes1 + pushes2 >= 9, rec)
    assert.equal(pushes1 + pushes2, pops, rec)
  end)
end)

describe("cuasync command", function()
  local function cli(args, env)
    local code = ([[
      local argv = %s
      arg = { [0] = "bin/cuasync" }
      for i, a in ipairs(argv) do arg[i] = a end
      dofile("bin/cuasync")
    ]]):format(args)
    return H.luajit(code, env, 120)
  end
  local sh = H.sh

  it("answers --help, and usage errors with exit code 2", function()
    local out, rc = sh("luajit bin/cuasync --help")
    assert.equal(0, rc, out)
    assert.truthy(out:find("sweep SCRIPT.lua", 1, true))
    out, rc = sh("luajit bin/cuasync frob")
    assert.equal(2, rc, out)
    assert.truthy(out:find("cuasync: unknown command frob", 1, true))
    out, rc = sh("luajit bin/cuasync compile --nope x.cu")
    assert.equal(2, rc, out)
    out, rc = sh("luajit bin/cuasync sweep --help")
    assert.equal(0, rc, out)
    assert.truthy(out:find("--shard I/N", 1, true))
  end)

  it("info and compile: registers, shared memory, spills and async instructions; errors exit 1", function()
    local out, rc = sh("luajit bin/cuasync info")
    assert.equal(0, rc, out)
    assert.truthy(out:find("NVRTC:", 1, true) and out:find("cache:", 1, true), out)
    out, rc = sh("luajit bin/cuasync compile tile_copy.cu -D STAGES=4 --arch sm_90a")
    assert.equal(0, rc, out)
    assert.truthy(out:find("kernel tile_copy: %d+ registers, 1024 bytes static shared memory"), out)
    assert.truthy(out:find("async instructions: cp.async.bulk.tensor.2d", 1, true), out)
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/bad.cu", "w"))
    f:write('extern "C" __global__ void k() {\n  int x = ;\n}\n')
    f:close()
    out, rc = sh("luajit bin/cuasync compile " .. dir .. "/bad.cu --arch sm_90a")
    assert.equal(1, rc, out)
    assert.truthy(out:find(">    2 |   int x = ;", 1, true), out)
    out, rc = sh("luajit bin/cuasync compile nope.cu")
    assert.equal(1, rc, out)
    assert.truthy(out:find('cuasync.program: file "nope.cu" not found', 1, true), out)
  end)

  it("sweeps a script with parallel compiles in worker processes; --param overrides; --merge joins", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write([[
      local cuasync = require("cuasync")
      return { name = "cli_sweep", host = true, rounds = 1, reps = 1, params = { stages = { 1, 2, 3, 4 } },
        program = function(p) return cuasync.program{ file = "copy_bulk.cu", arch = "sm_90a", defines = { STAGES = p.stages, CHUNK = 4096 } } end,
        build = function(p) return { run = function() end, bytes = p.stages } end }
    ]])
    f:close()
    local env = { CUASYNC_CACHE_DIR = H.tmpdir() }
    local out, rc = sh(("CUASYNC_CACHE_DIR=%s luajit bin/cuasync sweep %s/s.lua --jobs 2 --csv %s/o.csv --json %s/o.json --quiet"):format(
      env.CUASYNC_CACHE_DIR, dir, dir, dir))
    assert.equal(0, rc, out)
    assert.truthy(out:find("4 points: 4 measured, 0 pruned, 0 failed, 0 skipped", 1, true), out)
    assert.truthy(out:find("ms miss", 1, true), out)   -- compiled by the workers: misses there
    assert.truthy(out:find("wrote CSV " .. dir .. "/o.csv", 1, true), out)
    out, rc = sh(("CUASYNC_CACHE_DIR=%s luajit bin/cuasync sweep %s/s.lua --param stages=8,9 --force --quiet"):format(env.CUASYNC_CACHE_DIR, dir))
    assert.equal(0, rc, out)
    assert.truthy(out:find("2 points: 2 measured", 1, true), out)
    out, rc = sh(("luajit bin/cuasync sweep %s/s.lua --param depth=2"):format(dir))
    assert.equal(2, rc, out)   -- a usage error: the option names a parameter the script does not have
    assert.truthy(out:find('unknown param "depth" (params: stages)', 1, true), out)
    out, rc = sh(("luajit bin/cuasync sweep --merge %s/o.json"):format(dir))
    assert.equal(0, rc, out)
    assert.truthy(out:find("4 points: 4 measured", 1, true), out)
    out, rc = sh(("luajit bin/cuasync sweep %s/s.lua --json %s --quiet"):format(dir, H.missing("o.json")))
    assert.equal(1, rc, out)
    assert.truthy(out:find("4 points: 4 measured", 1, true) and out:find("cannot write " .. H.missing("o.json"), 1, true), out)
    out, rc = sh(("luajit bin/cuasync run %s/s.lua"):format(dir))
    assert.equal(0, rc, out)
  end)
end)

describe("sweep on the GPU", function()
  local gpu_it = H.gpu_it(it, pending)

  gpu_it("makes a hung variant a row with the watchdog's message and measures the rest; two workers agree", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/g.lua", "w"))
    f:write([==[
      local cuasync = require("cuasync")
      local sweep = require("cuasync.tools.sweep")
      local gpus = { tonumber(os.getenv("SWEEP_GPUS_A")), tonumber(os.getenv("SWEEP_GPUS_B")) }
      local buf
      local function program()
        return cuasync.program{ watchdog = { timeout_ms = 300 }, source = [[
          #include <cuasync/mbarrier.cuh>
          extern "C" __global__ void k(unsigned *out, unsigned v) {
            __shared__ cuasync::mbarrier_t b;
            if (threadIdx.x == 0) cuasync::mbarrier::init(&b, 2);
            __syncthreads();
            if (threadIdx.x == 0) { cuasync::mbarrier::arrive(&b); if (v != 3) cuasync::mbarrier::arrive(&b); }
            cuasync::mbarrier::wait_parity(&b, 0);
            out[blockIdx.x * blockDim.x + threadIdx.x] = v;
          }]] }
      end
      local S = sweep{ name = "gpu_sweep", rounds = 2, reps = 3, timeout_ms = 5000, params = { v = { 1, 2, 3, 4 } },
        program = program,
        build = function(p)
          buf = buf or cuasync.alloc(132 * 128 * 4)
          local k = program():compile():kernel("k", "ptr, u32")
          return { run = function() k:launch({ grid = 132, block = 128 }, buf, p.v) end, bytes = 132 * 128 * 4,
                   poison = function() buf:fill(0xA5) end,
                   verify = function() return buf:download("uint32_t", 1)[0] == p.v, "wrong value" end }
        end }
      S:run{ quiet = true, force = true, gpus = #gpus > 0 and gpus or nil }
      for _, r in ipairs(S.rows) do print("ROW", r.params.v, r.kind, r.gpu, r.reason and r.reason:sub(1, 120) or "") end
    ]==])
    f:close()
    for _, env in ipairs({ { CUASYNC_CACHE_DIR = H.tmpdir() }, { CUASYNC_CACHE_DIR = H.tmpdir(), SWEEP_GPUS_A = "0", SWEEP_GPUS_B = "0" } }) do
      local ok, out = H.luajit(("dofile(%q)"):format(dir .. "/g.lua"), env, 120)
      print("\n" .. out)
      assert.truthy(out:find("ROW\t1\tmeasured\t0", 1, true), out)
      assert.truthy(out:find("ROW\t2\tmeasured\t0", 1, true), out)
      assert.truthy(out:find("ROW\t3\tfailed\t[^\n]*hang: cuasync.watchdog: kernel 'k' hung"), out)
      assert.truthy(out:find("ROW\t4\tmeasured\t0", 1, true), out)
      assert.is_true(ok, out)
    end
  end)
end)

describe("sweep measurement on the GPU", function()
  local gpu_it = H.gpu_it(it, pending)

  gpu_it("runs bench's before hook untimed before each rep; flush_l2 sweeps measure; probe.memory measures once, then reads its cache", function()
    local ok, out = H.luajit([==[
      local cuasync = require("cuasync")
      local mod = cuasync.program{ source = [[
        extern "C" __global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
        extern "C" __global__ void nop(int *p) { if (p[0] == 12345) p[0] = 0; }]] }:compile()
      local spin, nop = mod:kernel("spin", "i64"), mod:kernel("nop", "ptr")
      local buf = cuasync.alloc(64)
      buf:fill(0)
      local calls = 0
      local r = cuasync.bench(function() nop:launch({ grid = 1, block = 32 }, buf) end,
        { warmup = 1, reps = 5, before = function() calls = calls + 1; spin:launch({ grid = 1, block = 1 }, 4000000) end })
      -- a 4M-cycle spin (2 ms at 2 GHz) before each rep, none of it in the reps' times
      print("BEFORE", calls, r.median < 0.5, #r.times)
      local S = cuasync.sweep{ name = "flushed", flush_l2 = true, rounds = 2, reps = 3, params = { n = { 1, 2 } },
        build = function(p) return { run = function() nop:launch({ grid = p.n, block = 32 }, buf) end, bytes = 64 } end }
      S:run{ quiet = true, force = true }
      -- its byte rows' of_copy asked cuasync.probe.memory first: the probe below reads its cache
      print("FLUSH", S.rows[1].kind, S.rows[2].kind, S.flush_buf:size() == 2 * cuasync.current_device().l2_bytes,
            S.rows[1].of_copy ~= nil)
      local m = cuasync.probe.memory(cuasync.current_device())
      print("PROBE", m.latency_ns > 100 and m.latency_ns < 20000 and m.idle_ns > 100 and m.idle_ns <= m.latency_ns * 1.2, m.dtod_gbps > 500 and m.dtod_gbps < 20000, m.bytes_per_sm > 0, m.cached,
            m.load_gbps > 0 and m.load_gbps < 2 * m.dtod_gbps)
      print(("probe: %.0f ns at full bandwidth (the chase's load %.0f GB/s, %.2f of DtoD), %.0f ns idle, %.0f GB/s DtoD, %.0f bytes per SM"):format(
        m.latency_ns, m.load_gbps, m.load_gbps / m.dtod_gbps, m.idle_ns, m.dtod_gbps, m.bytes_per_sm))
      local again = cuasync.probe.memory()
      print("CACHED", again.cached, again.latency_ns == m.latency_ns)
      -- a probe file changed by hand fails its checksum and is measured again
      local dir = os.getenv("CUASYNC_CACHE_DIR") .. "/probe"
      local p = io.popen("ls " .. dir)
      local file = dir .. "/" .. p:read("*l")
      p:close()
      local f = io.open(file)
      local text = f:read("*a"):gsub('"latency_ns":%d+', '"latency_ns":1')
      f:close()
      f = io.open(file, "w"); f:write(text); f:close()
      local third = cuasync.probe.memory()
      print("DAMAGED", third.cached, third.latency_ns > 100)
      -- an entry an older probe wrote (no load_gbps) is measured again, not read
      f = io.open(file); text = f:read("*a"):gsub('"load_gbps":[^,}]+,?', ''); f:close()
      f = io.open(file, "w"); f:write(text); f:close()
      local fourth = cuasync.probe.memory()
      print("OLD", fourth.cached, fourth.load_gbps ~= nil)
    ]==], { CUASYNC_CACHE_DIR = H.tmpdir() }, 120)
    print("\n" .. out)
    assert.is_true(ok, out)
    assert.truthy(out:find("BEFORE\t5\ttrue\t5", 1, true), out)
    assert.truthy(out:find("FLUSH\tmeasured\tmeasured\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("PROBE\ttrue\ttrue\ttrue\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("CACHED\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("DAMAGED\tnil\ttrue", 1, true), out)
    assert.truthy(out:find("OLD\tnil\ttrue", 1, true), out)
  end)
end)
