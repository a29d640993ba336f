-- The sweep's side of issue 41, one describe per defect, numbered as in the issue. Host sweeps
-- and stand-ins for sbatch only, so CI runs every line (the same defects against a real Slurm
-- are in slurm_spec.lua; the command's usage errors in spec/tools/command_spec.lua). The rules
-- each fix pins: every write checked (tools/report/common.lua, fs.lua); a run stopped early is
-- incomplete (tools/sweep/stop.lua); a row's values checked by one function (tools/sweep/row.lua,
-- row.check); every stored key exact (row.key_text); every usage error exits 2 naming the option
-- (tools/sweep/rules.lua, read by the API and the command alike).
local ffi = require("ffi")
local cuasync = require("cuasync")
local sweep = require("cuasync.tools.sweep")
local json = require("cuasync.tools.json")
local fs = require("cuasync.fs")
local H = require("helper")
local NOLIB = H.missing("libcuda.so.1")   -- a driver that is not there

local sh = H.sh
local ENV = "CUASYNC_CUDA_LIB=" .. NOLIB .. " "

local function nop() end

-- A host sweep of `n` points (k = 1..n), one round of one rep.
local function small(name, n, extra)
  local ks = {}
  for i = 1, n or 3 do ks[i] = i end
  local spec = { name = name, host = true, rounds = 1, reps = 1, params = { k = ks },
                 build = function(p) return { run = nop, bytes = 8 * p.k, verify = function() return true end } end }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return sweep(spec)
end

-- A script file holding `text`; returns its path.
local function script(text)
  local path = H.tmpdir() .. "/s.lua"
  H.write(path, text)
  return path
end

-- A busy wait of `ms` on the host clock.
local SPIN = "local function spin(ms) local t = os.clock() while os.clock() - t < ms / 1000 do end end\n"

describe("defect 1: every report write is checked", function()
  it("S:write fails by name, at the caller's line, for csv, json, t4, text and plot's data and script on a full disk", function()
    local S = small("full", 2):run{ quiet = true, force = true }
    for _, f in ipairs({ "csv", "json", "t4", "text" }) do
      local ok, err = pcall(S.write, S, f, "/dev/full")
      assert.is_false(ok)
      assert.truthy(tostring(err):find("^[^\n]*bad_input_spec%.lua:%d+: cuasync%.sweep%." .. f .. ": cannot write /dev/full: No space left on device$"),
        tostring(err))
    end
    -- the plot's two files, each on a full disk of its own (a link to /dev/full)
    local dir = H.tmpdir()
    assert.truthy(fs.kind("/dev/full"))
    sh("ln -s /dev/full " .. dir .. "/a.dat")
    local ok, err = pcall(S.write, S, "plot", dir .. "/a.svg", { x = "k" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.sweep.plot: cannot write " .. dir .. "/a.dat: No space left on device", 1, true), tostring(err))
    sh("ln -s /dev/full " .. dir .. "/b.gp")
    ok, err = pcall(S.write, S, "plot", dir .. "/b.svg", { x = "k" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuasync.sweep.plot: cannot write " .. dir .. "/b.gp: No space left on device", 1, true), tostring(err))
    -- the image gnuplot renders (it exits 0 when it cannot write it)
    if require("cuasync.tools.report.plot").gnuplot() then
      sh("ln -s /dev/full " .. dir .. "/c.png")
      ok, err = pcall(S.write, S, "plot", dir .. "/c.png", { x = "k" })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cuasync.sweep.plot: cannot write " .. dir .. "/c.png: gnuplot ran, but the image is not a file", 1, true), tostring(err))
      assert.equal(dir .. "/d.svg", S:write("plot", dir .. "/d.svg", { x = "k" }))
    end
  end)

  it("cuasync sweep --out on a full disk names each file it could not write, never says wrote, exits 1", function()
    local s = script('return { name = "full", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    local dir = H.tmpdir()
    for _, f in ipairs({ "full.csv", "full.json", "full.t4.json" }) do sh(("ln -s /dev/full %s/%s"):format(dir, f)) end
    local env = ENV .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " "
    local out, rc = sh(env .. "luajit bin/cuasync sweep " .. s .. " --quiet --out " .. dir)
    assert.equal(1, rc, out)
    assert.is_nil(out:find("wrote", 1, true), out)
    for _, f in ipairs({ "csv", "json", "t4" }) do
      local file = dir .. "/full." .. (f == "t4" and "t4.json" or f)
      -- each line its own, without the launcher's position (bin/cuasync:13: is not the user's line)
      assert.truthy(out:find("\ncuasync.sweep." .. f .. ": cannot write " .. file .. ": No space left on device\n", 1, true), out)
    end
    assert.is_nil(out:find("bin/cuasync:%d"), out)
    -- a directory that cannot be made is named; the table still printed
    out, rc = sh(env .. "luajit bin/cuasync sweep " .. s .. " --quiet --out /dev/full/x")
    assert.equal(1, rc, out)
    assert.truthy(out:find("2 points: 2 measured", 1, true), out)
    assert.truthy(out:find("cannot create directory /dev/full/x", 1, true), out)
    -- the table itself on a full disk: said, exit 1
    out, rc = sh(env .. "luajit bin/cuasync sweep " .. s .. " --quiet > /dev/full")
    assert.equal(1, rc, out)
    assert.truthy(out:find("cuasync sweep: cannot write the standard output: No space left on device", 1, true), out)
    -- the reason is kept where the write failed: once the C library dropped the failed write's buffer
    -- (a flush in between, by anything in the process), the last flush succeeds and only the error flag
    -- is left; the message still says why, not "a write to it failed"
    local probe = H.tmpdir() .. "/probe.lua"
    local f = assert(io.open(probe, "w"))
    f:write('package.path = "lua/?.lua;lua/?/init.lua;" .. package.path package.cpath = "build/?.so;" .. package.cpath\n',
      'local cli = require("cuasync.tools.cli")\n', 'cli.print(("x"):rep(20000))\n', 'io.stdout:flush()\n',
      'local ok, why = cli.stdout_written()\n', 'io.stderr:write(tostring(ok), " ", tostring(why), "\\n")\n')
    f:close()
    out = sh(ENV .. "luajit " .. probe .. " > /dev/full")
    assert.equal("nil No space left on device\n", out)
  end)
end)

describe("defect 3: Ctrl-C stops a host sweep, and a sweep stopped early is incomplete", function()

  it("a run stopped by Ctrl-C twice is incomplete: S.complete, the JSON, the INCOMPLETE line", function()
    local native = require("cuasync.native")
    require("cuasync.cdef.signal")
    pcall(ffi.cdef, "int raise(int sig);")
    local S = small("stopped", 4, { build = function(p)
      if p.k == 2 then   -- a Ctrl-C pair that lands between two of the sweep's steps (outside a variant's code)
        native.C.cuasync_interrupt_inside(nil)
        ffi.C.raise(2)
        ffi.C.raise(2)
      end
      return { run = nop, bytes = 8 }
    end })
    S:run{ quiet = true, force = true }
    assert.equal("skipped", S.rows[3].kind)
    assert.equal("not run: the sweep was stopped by Ctrl-C (twice)", S.rows[4].reason)
    assert.is_false(S.complete)
    assert.is_false(S.result.complete)
    assert.equal("stopped by Ctrl-C (twice): 2 of 4 candidate points not run", S.result.stopped)
    local path = S:write("json", H.tmpdir() .. "/s.json")
    assert.is_false(json.decode_file(path).complete)
    assert.truthy(S:text():find("\nINCOMPLETE: stopped by Ctrl-C (twice): 2 of 4 candidate points not run;", 1, true), S:text())
    assert.is_false(sweep.merge({ path }).complete)
  end)

  it("cuasync sweep stopped by Ctrl-C twice writes what was measured, says it is incomplete and exits 130", function()
    local s = script([[
      local ffi = require("ffi")
      local C = require("cuasync.native").C
      require("cuasync.cdef.signal")
      pcall(ffi.cdef, "int raise(int sig);")
      return { name = "coop", host = true, rounds = 1, reps = 1, params = { k = { 1, 2, 3, 4 } },
        build = function(p)
          if p.k == 2 then C.cuasync_interrupt_inside(nil) ffi.C.raise(2) ffi.C.raise(2) end
          return { run = function() end, bytes = 8 }
        end }
    ]])
    local dir = H.tmpdir()
    local out, rc = sh(ENV .. "CUASYNC_CACHE_DIR=" .. H.tmpdir() .. " luajit bin/cuasync sweep " .. s .. " --quiet --out " .. dir)
    assert.equal(130, rc, out)
    assert.truthy(out:find("INCOMPLETE: stopped by Ctrl-C (twice): 2 of 4 candidate points not run", 1, true), out)
    assert.truthy(out:find("wrote JSON " .. dir .. "/coop.json", 1, true), out)
    assert.truthy(out:find("cuasync sweep: stopped by Ctrl-C (twice): the rows measured before are printed and written (exit 130)", 1, true), out)
    assert.is_false(json.decode_file(dir .. "/coop.json").complete)
  end)

  it("a second Ctrl-C inside a host variant that never returns ends the process, writing what was measured", function()
    local dir = H.tmpdir()
    local s = script(SPIN .. ([[
      return { name = "ctrlc", host = true, rounds = 1, reps = 2, budget = { points = 100 },
        params = { k = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 } },
        build = function(p) return { bytes = 8, run = function()
          if p.k == 10 then
            local f = io.open(%q, "w") f:write("in\n") f:close()
            local x = 0
            while true do x = x + 1 end   -- a compiled loop: no hook, no poll reaches it
          end
          spin(1)
        end } end }
    ]]):format(dir .. "/marker"))
    -- --jobs 1: batches of 8, so points 1..8 are measured before the batch holding 10
    local pid = sh(("%s CUASYNC_CACHE_DIR=%s luajit bin/cuasync sweep %s --jobs 1 --quiet --out %s/out > %s/stdout 2> %s/stderr & echo $!"):format(
      ENV, H.tmpdir(), s, dir, dir, dir)):match("(%d+)")
    local function alive() return select(2, sh("kill -0 " .. pid)) == 0 end
    local function wait(cond, seconds)
      for _ = 1, seconds * 20 do if cond() then return true end sh("sleep 0.05") end
      return false
    end
    assert.is_true(wait(function() return fs.kind(dir .. "/marker") == "file" end, 60), "variant 10 never ran")
    sh("sleep 0.2")
    sh("kill -INT " .. pid)
    sh("sleep 0.2")
    sh("kill -INT " .. pid)
    local ended = wait(function() return not alive() end, 10)
    if not ended then sh("kill -9 " .. pid) end
    local out, err = H.read(dir .. "/stdout") or "", H.read(dir .. "/stderr") or ""
    assert.is_true(ended, "two Ctrl-C did not end it:\n" .. out .. err)
    assert.truthy(err:find("cuasync.sweep.run: stopped by Ctrl-C in variant #10 (k=10) run(), which did not return: the rows measured before it are printed and written to " .. dir .. "/out/ctrlc.csv, ", 1, true), err)
    assert.truthy(out:find("12 points: 8 measured, 0 pruned, 0 failed, 4 skipped", 1, true), out)
    assert.truthy(out:find("INCOMPLETE: stopped by Ctrl-C (twice): 4 of 12 candidate points not run", 1, true), out)
    local doc = assert(json.decode_file(dir .. "/out/ctrlc.json"))
    assert.is_false(doc.complete)
    assert.equal("measured", doc.rows[8].kind)
    assert.equal("not run: the sweep was stopped by Ctrl-C (twice)", doc.rows[10].reason)
    assert.truthy(H.read(dir .. "/out/ctrlc.csv"):find("\n8,8,measured,", 1, true))
    assert.truthy(fs.kind(dir .. "/out/ctrlc.t4.json") == "file")
  end)

  it("the native rule: a second Ctrl-C inside code the caller cannot poll, or a third anywhere, writes the kept files and exits 130", function()
    local dir = H.tmpdir()
    local function run(body)
      local ok, out = H.luajit(([[
        local ffi = require("ffi")
        local C = require("cuasync.native").C
        require("cuasync.cdef.signal")
        pcall(ffi.cdef, "int raise(int sig);")
        C.cuasync_interrupt_begin()
        local files = ffi.new("cuasync_stop_file[2]")
        local keep = { "rows\n", "stopped in \1 ran\n" }
        files[0].path, files[0].data, files[0].len = %q, keep[1], #keep[1]
        files[1].path, files[1].fd, files[1].data, files[1].len = nil, 2, keep[2], #keep[2]
        assert(C.cuasync_interrupt_keep(files, 2) == 0)
        %s
        print("still running", C.cuasync_interrupt_count())
      ]]):format(dir .. "/kept", body), { CUASYNC_CUDA_LIB = NOLIB }, 30)
      return ok, out
    end
    local ok, out = run("ffi.C.raise(2) ffi.C.raise(2)")
    assert.is_true(ok, out)
    assert.truthy(out:find("still running\t2", 1, true), out)
    assert.is_nil(H.read(dir .. "/kept"))
    ok, out = run('C.cuasync_interrupt_inside("variant #3") ffi.C.raise(2) ffi.C.raise(2)')
    assert.is_false(ok)
    assert.truthy(out:find("stopped in variant #3 ran\n", 1, true), out)
    assert.is_nil(out:find("still running", 1, true), out)
    assert.equal("rows\n", H.read(dir .. "/kept"))
    os.remove(dir .. "/kept")
    ok, out = run("ffi.C.raise(2) ffi.C.raise(2) ffi.C.raise(2)")
    assert.is_false(ok)
    assert.truthy(out:find("stopped in a step that did not stop at the second Ctrl-C ran\n", 1, true), out)
    assert.equal("rows\n", H.read(dir .. "/kept"))
    local _, rc = sh(ENV .. [[luajit -e 'package.cpath = "build/?.so;" .. package.cpath; package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      local ffi = require("ffi") local C = require("cuasync.native").C require("cuasync.cdef.signal") ffi.cdef("int raise(int);")
      C.cuasync_interrupt_begin() for _ = 1, 3 do ffi.C.raise(2) end']])
    assert.equal(130, rc)
  end)
end)

describe("defect 4: --slurm with more shards than points", function()
  it("submits one shard per point at most, and says so", function()
    local slurm = require("cuasync.tools.sweep.slurm")
    local dir = H.tmpdir()
    local S = small("few", 3)
    local q = slurm.queue
    local which = q.which
    q.which = function(name) return "/usr/bin/" .. name end
    local ok, err = pcall(S.run, S, { slurm = { dir = dir .. "/s", dry_run = true } })   -- the default 4 shards
    q.which = which
    assert.is_true(ok, tostring(err))
    assert.equal(3, S.slurm.shards)
    assert.same({ 0, 1, 2 }, S.slurm.submitted)
    assert.truthy(S.slurm.script:find("#SBATCH --array=0-2\n", 1, true), S.slurm.script)
    assert.truthy(S.slurm.script:find('CUASYNC_SWEEP_SHARD="$((SLURM_ARRAY_TASK_ID + 1))/3"', 1, true), S.slurm.script)
    assert.equal("4 shards asked for, but the sweep has 3 points: 3 shards, one point each", S.slurm.note)
  end)
end)

-- A sweep's JSON with one thing changed; returns its path.
local function tampered(change, name)
  local S = small(name or "tamper", 3):run{ quiet = true, force = true }
  local path = S:write("json", H.tmpdir() .. "/t.json")
  local doc = json.decode_file(path)
  change(doc)
  H.write(path, json.encode(doc))
  return path
end

local function refused(paths)
  local ok, err = pcall(sweep.merge, paths)
  assert.is_false(ok, "merged")
  return tostring(err)
end

describe("defect 5: a shard's values are checked like a fresh row's", function()
  it("reads back what merge wrote when it kept two keys of one point (another driver), and still refuses a plain duplicate", function()
    local dir = H.tmpdir()
    local S = sweep{ name = "dup_merge", host = true, rounds = 1, reps = 1, params = { n = { 1000, 2000 } },
      build = function(p) local acc = 0; return { run = function() for i = 1, p.n do acc = acc + i end end, bytes = p.n } end }
    S:run{ quiet = true, force = true }
    S:json(dir .. "/a.json")
    local text = assert(fs.read(dir .. "/a.json"))
    assert(fs.write(dir .. "/b.json", (text:gsub('"key":%s*"host|', '"key":"host-newdriver|'))))
    local M = sweep.merge({ dir .. "/a.json", dir .. "/b.json" })
    assert.equal(4, #M.rows)   -- each point twice, under two keys
    M:json(dir .. "/merged.json")
    local again = sweep.merge({ dir .. "/merged.json" })
    assert.equal(4, #again.rows)
  end)

  it("refuses a measured row's figure that is not a positive number, by row and field", function()
    for _, case in ipairs({
      { function(d) d.rows[1].ms = "fast" end, 'rows[1].ms is "fast": a measured row\'s ms must be a finite number > 0' },
      { function(d) d.rows[1].ratio = "x" end, 'rows[1].ratio is "x": ratio must be a finite number > 0' },
      { function(d) d.rows[1].times = -1 end, "rows[1].times is -1: times must be a list of finite numbers > 0" },
      { function(d) d.rows[2].times = { 1, -2 } end, "rows[2].times[2] is -2: times must be a list of finite numbers > 0" },
      { function(d) d.rows[1].ms = -1 end, "rows[1].ms is -1: a measured row's ms must be a finite number > 0" },
      { function(d) d.rows[1].ms = 0 end, "rows[1].ms is 0: a measured row's ms must be a finite number > 0" },
      { function(d) d.rows[3].ms = nil end, "rows[3] is measured but has no ms" },
      { function(d) d.rows[1].verified = "yes" end, 'rows[1].verified is "yes": verified must be true or false' },
      { function(d) d.rows[1].kind = "skipped"; d.rows[1].reason = 7 end, "rows[1].reason is 7: reason must be a string" },
      { function(d) d.rows[1].failed_in = "lunch" end, 'rows[1].failed_in is "lunch": failed_in must be one of where, program' },
      { function(d) d.rows[2].index = 1 end, "rows[2] has index 1, as rows[1] has: one row per index (two only under different keys)" },
      { function(d) d.rows[1].params.k = 5 end, "rows[1].params is k=5, but point 1 of the file's params is k=1" },
      { function(d) d.rows[1].params.k = { 1 } end, "rows[1].params.k is a table with [1]: a parameter value must be a number, string or boolean" },
    }) do
      local path = tampered(case[1])
      local err = refused({ path })
      assert.truthy(err:find('cuasync.sweep.merge: "' .. path .. '" is not a sweep\'s JSON (' .. case[2], 1, true), err)
    end
  end)

  it("refuses shards of other value lists; a merge that lacks a shard is incomplete and says which", function()
    local dir = H.tmpdir()
    local function shard(ks, i, n)
      local S = sweep{ name = "lists", host = true, rounds = 1, reps = 1, params = { k = ks },
                       build = function(p) return { run = nop, bytes = 8 * p.k } end }
      return S:run{ quiet = true, force = true, shard = i .. "/" .. n }:write("json", ("%s/%d_%d_%s.json"):format(dir, i, n, table.concat(ks, "")))
    end
    local a, b = shard({ 1, 2, 3 }, 1, 2), shard({ 4, 5, 6 }, 2, 2)
    local err = refused({ a, b })
    assert.truthy(err:find(b .. " was run with params k = 4, 5, 6, " .. a .. " with k = 1, 2, 3: the shards of one sweep share its value lists", 1, true), err)
    local one, two = shard({ 1, 2, 3, 4, 5, 6 }, 1, 3), shard({ 1, 2, 3, 4, 5, 6 }, 2, 3)
    local M = sweep.merge({ one, two })
    assert.is_false(M.complete)
    assert.equal("shard 3/3 was not merged: its 2 points have no rows", M.result.stopped)
    assert.truthy(M:text():find("INCOMPLETE: shard 3/3 was not merged", 1, true), M:text())
    assert.equal(4, #M.rows)
    M = sweep.merge({ one, two, shard({ 1, 2, 3, 4, 5, 6 }, 3, 3) })
    assert.is_true(M.complete)
  end)

  it("the store trusts only entries that are rows: a sealed entry with a bad figure is measured again", function()
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      local fs = require("cuasync.fs")
      local store = require("cuasync.tools.sweep.store")
      local function S() return sweep{ name = "sealed", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } },
        build = function(p) return { run = function() end, bytes = 8 } end } end
      local a = S():run{ quiet = true }
      local doc = fs.read_json(store.path("sealed"))
      for k, e in pairs(doc.entries) do
        e.sum = nil
        e.ratio = "x"
        doc.entries[k] = fs.seal(e)
      end
      assert(fs.write_json(store.path("sealed"), doc))
      local b = S():run{ quiet = true }
      print("AGAIN", b.rows[1].cached, b.rows[2].cached, b.result.store.damaged, type(b.rows[1].ratio))
      print(b:text())
    ]], { CUASYNC_CACHE_DIR = H.tmpdir(), CUASYNC_CUDA_LIB = NOLIB }, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("AGAIN\tnil\tnil\t2\tnil", 1, true), out)
  end)
end)

describe("defect 6: every stored key is exact", function()
  it("values that print alike are two points of the store: 0.1000001 and 0.1000002, 1 and \"1\"", function()
    local ok, out = H.luajit(SPIN .. [[
      local sweep = require("cuasync.tools.sweep")
      local function S(params, slow)
        return sweep{ name = "alike", host = true, rounds = 1, reps = 1, params = params,
          build = function(p) return { run = function() spin(slow(p) and 50 or 1) end, bytes = 8 } end }
      end
      local params = { alpha = { 0.1000001, 0.1000002 } }
      local function slow(p) return p.alpha == 0.1000002 end
      S(params, slow):run{ quiet = true }
      local b = S(params, slow):run{ quiet = true }
      print("ALPHA", b.rows[1].cached, b.rows[2].cached, b.rows[1].ms < 25, b.rows[2].ms > 25, b.rows[1].key ~= b.rows[2].key)
      local kinds = { k = { 1, "1" } }
      local function str(p) return type(p.k) == "string" end
      S(kinds, str):run{ quiet = true }
      b = S(kinds, str):run{ quiet = true }
      print("TYPE", b.rows[1].cached, b.rows[2].cached, b.rows[1].ms < 25, b.rows[2].ms > 25)
      print("TEXT", require("cuasync.tools.sweep.row").params_text(b.order, b.rows[2].params))
      print(b:text())
    ]], { CUASYNC_CACHE_DIR = H.tmpdir(), CUASYNC_CUDA_LIB = NOLIB }, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("ALPHA\ttrue\ttrue\ttrue\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("TYPE\ttrue\ttrue\ttrue\ttrue", 1, true), out)
    assert.truthy(out:find("TEXT\tk=1", 1, true), out)   -- the display stays short
  end)

  it("a store written with the old keys still loads: entries under a key written otherwise now are measured again", function()
    local dir = H.tmpdir()
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      local fs = require("cuasync.fs")
      local store = require("cuasync.tools.sweep.store")
      local function S() return sweep{ name = "oldkeys", host = true, rounds = 1, reps = 1, params = { k = { "a", 1, 0.1 } },
        build = function(p) return { run = function() end, bytes = 8 } end } end
      S():run{ quiet = true }
      local doc = fs.read_json(store.path("oldkeys"))
      local old = { entries = {}, runs = {}, version = doc.version }
      for key, e in pairs(doc.entries) do   -- as the store wrote them before: "device|digest|k=a", "k=0.5"
        old.entries[key:gsub("|k=[^|]*$", "|k=" .. require("cuasync.tools.sweep.row").fmt_value(e.params.k))] = e
      end
      assert(fs.write_json(store.path("oldkeys"), old))
      local b = S():run{ quiet = true }
      print("OLD", b.rows[1].cached, b.rows[2].cached, b.rows[3].cached, b.result.store.damaged, b.result.store.problem)
    ]], { CUASYNC_CACHE_DIR = dir, CUASYNC_CUDA_LIB = NOLIB }, 60)
    assert.is_true(ok, out)
    -- a string and a fraction had other keys; an integer's key is written as it was
    assert.truthy(out:find("OLD\tnil\ttrue\tnil\t0\tnil", 1, true), out)
  end)
end)

-- A stand-in for Slurm's commands: sbatch answers `answer` (nil: refuses with `why`).
local function fake_slurm(answer, why)
  local q = require("cuasync.tools.sweep.slurm").queue
  local saved = { which = q.which, submit = q.submit, queued = q.queued, cancel = q.cancel }
  q.which = function(name) return "/usr/bin/" .. name end
  q.submit = function() if answer then return answer end return nil, why end
  q.queued = function() return {} end
  q.cancel = nop
  return function() for k, v in pairs(saved) do q[k] = v end end
end

describe("defect 7: a Slurm directory holds only what cuasync made", function()
  it("refuses an empty --slurm-dir and --partition by name, exit 2, touching nothing", function()
    local dir = H.tmpdir()
    H.write(dir .. "/mine.json", "the user's")
    H.write(dir .. "/shard_0.json", "the user's")
    local s = script('return { name = "mine", host = true, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    local bin = H.tmpdir()
    H.write(bin .. "/sbatch", "#!/bin/sh\necho 'sbatch: error: refused' >&2\nexit 1\n")
    sh("chmod +x " .. bin .. "/sbatch")
    local base = ("cd %s && PATH=%s:$PATH %s luajit %s/bin/cuasync sweep %s --slurm --gpus-per-task 0 "):format(
      dir, bin, ENV, (sh("pwd"):gsub("%s+$", "")), s)
    for _, case in ipairs({ { "--slurm-dir ''", "cuasync: --slurm-dir '' must not be empty" },
                            { "--partition ''", "cuasync: --partition '' must not be empty" } }) do
      local out, rc = sh(base .. case[1])
      assert.equal(2, rc, out)
      assert.truthy(out:find(case[2], 1, true), out)
    end
    -- a directory of the user's own files: refused before anything is removed or submitted
    local out, rc = sh(base .. "--slurm-dir .")
    assert.equal(1, rc, out)
    assert.truthy(out:find("slurm: " .. dir .. "/. holds mine.json, shard_0.json, which no Slurm run of this sweep made (it has no manifest.json): give slurm.dir (--slurm-dir) a directory of its own", 1, true), out)
    assert.equal("the user's", H.read(dir .. "/mine.json"))
    assert.equal("the user's", H.read(dir .. "/shard_0.json"))
    assert.is_nil(H.read(dir .. "/array.sbatch"))
  end)

  it("puts a shard it resubmits back when sbatch refuses; a dry run makes no directory", function()
    local dir = H.tmpdir() .. "/runs"
    local S = small("back", 2)
    local undo = fake_slurm(nil, "sbatch: error: Batch job submission failed: no")
    local ok, err = pcall(S.run, S, { slurm = { dir = dir .. "/dry", shards = 2, dry_run = true } })
    assert.is_true(ok, tostring(err))
    assert.equal("missing", fs.kind(dir .. "/dry"))
    ok, err = pcall(S.run, S, { slurm = { dir = dir, shards = 2 } })
    assert.is_false(ok)
    undo()
    -- the shards of an earlier run, made the way the array's tasks make them
    for i = 1, 2 do
      small("back", 2):run{ quiet = true, force = true, shard = i .. "/2" }:write("json", ("%s/shard_%d.json"):format(dir, i - 1))
    end
    local before = H.read(dir .. "/shard_0.json")
    undo = fake_slurm(nil, "sbatch: error: Batch job submission failed: no")
    ok, err = pcall(S.run, S, { slurm = { dir = dir, shards = 2 }, force = true })
    undo()
    assert.is_false(ok)
    assert.truthy(tostring(err):find("sbatch refused the job array: sbatch: error: Batch job submission failed: no", 1, true), tostring(err))
    assert.equal(before, H.read(dir .. "/shard_0.json"))
    assert.truthy(H.read(dir .. "/shard_1.json"))
  end)
end)

describe("defect 8: the gres refusal says what to do", function()
  it("adds a hint to sbatch's bare 'Invalid generic resource (gres) specification'", function()
    local S = sweep{ name = "gres", params = { k = { 1, 2 } }, build = function() return { run = nop } end }
    local undo = fake_slurm(nil, "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification")
    local ok, err = pcall(S.run, S, { slurm = { dir = H.tmpdir() .. "/g", shards = 2 } })
    undo()
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Invalid generic resource (gres) specification: the array asks for 1 GPU per task (slurm.gpus_per_task, --gpus-per-task) and the cluster, or its partition, offers no gres/gpu: give a GPU partition (--partition), or 0 for a sweep that needs no GPU", 1, true), tostring(err))
  end)
end)

describe("defect 9: seeds never alias", function()
  it("draws a sequence of its own for every seed in 0..2^31, the same as before for the seeds that did not alias", function()
    local rng = require("cuasync.tools.sweep.rng")
    local function draws(seed)
      local g, t = rng.new(seed), {}
      for i = 1, 6 do t[i] = g:int(1000000) end
      return table.concat(t, ",")
    end
    assert.equal(2 ^ 31, rng.MAX_SEED)
    local seen = {}
    for _, seed in ipairs({ 0, 1, 2, 3, 2 ^ 31 - 3, 2 ^ 31 - 2, 2 ^ 31 - 1, 2 ^ 31 }) do
      local d = draws(seed)
      assert.is_nil(seen[d], ("seed %d draws as seed %s does"):format(seed, tostring(seen[d])))
      seen[d] = seed
    end
    -- the seeds in 0..2^31 - 3 draw what they drew before (the search spec's figures stand)
    assert.equal("48272,605795,394887,720638,669042,355684", draws(1))
    assert.equal("435377,877854,88762,763011,814607,127965", draws(0))
    assert.equal("387106,272060,177523,526021,629213,772282", draws(2 ^ 31 - 3))
    local S = small("seeds", 3)
    for _, seed in ipairs({ 2 ^ 31 + 1, -1 }) do
      assert.has_error(function() S:run{ seed = seed, strategy = "random" } end,
        ("cuasync.sweep.run: seed must be an integer in 0..2147483648 (got %d)"):format(seed))
    end
    -- seeds 1 and 2^31 sample different points
    local function sample(seed)
      local R = small("seeds", 12):run{ quiet = true, force = true, strategy = "random", budget = { points = 4 }, seed = seed }
      local t = {}
      for _, r in ipairs(R.rows) do if r.kind == "measured" then t[#t + 1] = r.index end end
      return table.concat(t, ",")
    end
    assert.are_not.equal(sample(1), sample(2 ^ 31))
  end)
end)

describe("defect 10: sweep.best", function()
  it("answers for any name a sweep accepts, and never offers a row no verify passed", function()
    local ok, out = H.luajit([[
      local sweep = require("cuasync.tools.sweep")
      sweep{ name = ".hidden", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } },
        build = function(p) return { run = function() end, bytes = 8, verify = function() return true end } end }:run{ quiet = true }
      print("HIDDEN", sweep.best(".hidden"))
      sweep{ name = "noverify", host = true, rounds = 1, reps = 1, params = { k = { 1, 2 } },
        build = function(p) return { run = function() end, bytes = 8 } end }:run{ quiet = true }
      print("NOVERIFY", sweep.best("noverify"))
      print("DOTS", pcall(sweep, { name = "..", host = true, params = { k = { 1 } }, build = function() end }))
    ]], { CUASYNC_CACHE_DIR = H.tmpdir(), CUASYNC_CUDA_LIB = NOLIB }, 60)
    assert.is_true(ok, out)
    assert.truthy(out:find("HIDDEN\ttable:", 1, true), out)
    assert.truthy(out:find("NOVERIFY\tnil\tthe latest run of sweep 'noverify' on host %([^\n]*/sweeps/noverify%.json%) has no verified measured row: it stored 2 measured rows, 2 never verified: build%(p%) returned no verify;"), out)
    assert.truthy(out:find('DOTS\tfalse\t[^\n]*cuasync.sweep: name ".." is not a sweep name'), out)
  end)
end)

describe("defect 11: a sweep's bad parts are named", function()
  it("a program(p) that is not a cuasync.program fails its row at the program step, naming the rule", function()
    local S = small("notprog", 2, { program = function() return { compile = function() end } end })
    S:run{ quiet = true, force = true, jobs = 1 }
    for _, r in ipairs(S.rows) do
      assert.equal("failed", r.kind)
      assert.equal("program", r.failed_in)
      assert.equal("program: program(p) must return a cuasync.program (got a table with compile)", r.reason)
    end
  end)

  it("refuses a bad gpus on a host sweep too, by name", function()
    local S = small("gpus", 2)
    assert.has_error(function() S:run{ gpus = { -1 } } end, "cuasync.sweep.run: gpus[1] must be an integer in 0..63 (got -1)")
    assert.has_error(function() S:run{ gpus = "x" } end, 'cuasync.sweep.run: gpus must be "all" or a list of GPU ordinals (got "x")')
  end)
end)
