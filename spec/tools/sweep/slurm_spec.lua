-- Sweeps through Slurm, against a real single-node Slurm (spec/support/slurm.sh runs the recipe
-- docs/sweeps.md shows, its blocks read from the page: munged, slurmctld and slurmd started
-- directly, stopped by PID; a spec below holds the page's blocks and the gres lines): a host sweep and the compile-only make-run sweep
-- through --slurm --wait give a local run's rows; a killed array task is reported by its index
-- and log and is the only one submitted again; merging is idempotent; bad input is named. Where
-- the machine is not root or Slurm cannot be installed, the Slurm specs are skipped (counted).
local H = require("helper")
local cuasync = require("cuasync")
local json = require("cuasync.tools.json")
local slurm = require("cuasync.tools.sweep.slurm")

local sh = H.sh

local root = H.tmpdir()
-- under `make asan` every process inherits the ASan runtime preload, and Slurm's daemons and
-- clients (like ps) deadlock in it: the Slurm specs run in `make test`
local asan = (os.getenv("LD_PRELOAD") or ""):find("libasan") ~= nil
local up_out, up_rc = "", 3
if not asan then up_out, up_rc = sh("bash spec/support/slurm.sh up " .. root .. "/slurm") end
local conf = up_rc == 0 and up_out:match("(%S+slurm%.conf)%s*$") or nil
local why = conf and nil or (asan and "Slurm's tools deadlock under the ASan preload (make test runs this spec)"
                             or ("no Slurm here: " .. up_out:gsub("%s+$", ""):sub(-200)))
local cache_dir = root .. "/cache"
local ENV = ("SLURM_CONF=%s CUASYNC_CACHE_DIR=%s "):format(tostring(conf), cache_dir)
local SWEEP = "luajit bin/cuasync sweep spec/support/slurm_sweep.lua "
local FAST = "--slurm --shards 4 --gpus-per-task 0 --poll-seconds 0.2 --quiet "

-- slurm_it: `it` where the Slurm came up, else a pending spec saying why.
local function slurm_it(name, fn)
  if conf then return it(name, fn) end
  return pending(name .. " [skipped: " .. why .. "]")
end

-- The rows of a sweep JSON as "index kind reason params" lines (figures differ run to run).
local function identity(path)
  local doc = assert(json.decode_file(path), path)
  local t = {}
  for _, r in ipairs(doc.rows) do
    local p = {}
    for _, k in ipairs(doc.order) do p[#p + 1] = k .. "=" .. tostring(r.params[k]) end
    t[#t + 1] = ("%d %s %s %s"):format(r.index, r.kind, tostring(r.reason), table.concat(p, " "))
  end
  return t
end

describe("sweeps through Slurm", function()
  teardown(function()
    if conf then sh("bash spec/support/slurm.sh down " .. root .. "/slurm") end
  end)

  slurm_it("runs a host sweep as a 4-shard job array and a merge job; --wait prints the merged table, a local run's rows", function()
    local dir = root .. "/host"
    local t0 = cuasync.now_ns()
    local out, rc = sh(ENV .. SWEEP .. FAST .. "--wait --slurm-dir " .. dir)
    local wall = tonumber(cuasync.now_ns() - t0) / 1e9
    assert.equal(0, rc, out)
    assert.truthy(out:find("8 points: 7 measured, 1 pruned, 0 failed, 0 skipped", 1, true), out)
    local overhead = out:match("scheduler overhead ([%d.]+) s")
    assert.truthy(overhead, out)
    print(("# slurm: host sweep, 4 shards + merge through --wait in %.1f s (scheduler overhead %s s)"):format(wall, overhead))
    out, rc = sh(ENV .. SWEEP .. "--force --quiet --json " .. root .. "/host_local.json")
    assert.equal(0, rc, out)
    assert.same(identity(root .. "/host_local.json"), identity(dir .. "/slurm_host.json"))
    -- the script the array ran: one task per shard, each writing its own JSON
    local script = assert(io.open(dir .. "/array.sbatch")):read("*a")
    assert.truthy(script:find("#SBATCH --array=0-3", 1, true), script)
    assert.truthy(script:find('CUASYNC_SWEEP_SHARD="$((SLURM_ARRAY_TASK_ID + 1))/4"', 1, true), script)
    -- merging is idempotent: a shard twice, and overlapping files, give each row once
    out, rc = sh(("luajit bin/cuasync sweep --merge %s/shard_0.json %s/shard_0.json %s/shard_1.json %s/slurm_host.json --json %s/m.json"):format(
      dir, dir, dir, dir, root))
    assert.equal(0, rc, out)
    assert.same(identity(dir .. "/slurm_host.json"), identity(root .. "/m.json"))
    -- two runs' figures of one key: one row, both runs kept, said in a note
    local S = require("cuasync.tools.sweep").merge({ dir .. "/slurm_host.json", root .. "/host_local.json" })
    assert.equal(8, #S.rows)
    local noted = 0
    for _, r in ipairs(S.rows) do
      if r.note then
        noted = noted + 1
        assert.equal(2, #r.runs)
        assert.truthy(r.note:find("measured 2 times with different figures", 1, true), r.note)
      end
    end
    assert.truthy(noted > 0)
  end)

  slurm_it("reports a killed array task by index and log, and submits only that shard again", function()
    local dir = root .. "/kill"
    local bg = ("(%s CUASYNC_SPEC_SLOW_SHARD=1 %s %s --force --wait --slurm-dir %s > %s/out 2>&1; echo $? > %s/rc) &"):format(
      ENV, SWEEP, FAST, dir, root, root)
    os.execute(bg)
    local task
    for _ = 1, 150 do   -- the slow task running: cancel it
      local q = sh(ENV .. "squeue -h -r -o '%i %T %j'")
      task = q:match("(%d+_1) RUNNING cuasync%-slurm_host")
      if task then break end
      os.execute("sleep 0.2")
    end
    assert.truthy(task, "array task 1 never ran")
    sh(ENV .. "scancel " .. task)
    local rc
    for _ = 1, 300 do
      local f = io.open(root .. "/rc")
      rc = f and tonumber(f:read("*a"))
      if f then f:close() end
      if rc then break end
      os.execute("sleep 0.1")
    end
    local out = assert(io.open(root .. "/out")):read("*a")
    assert.equal(1, rc, out)
    assert.truthy(out:find("1 of the 4 shards submitted failed: shard 2/4 (array index 1, job " .. task .. ") CANCELLED", 1, true), out)
    assert.truthy(out:find("log " .. dir .. "/shard_1.log", 1, true), out)
    assert.truthy(out:find("run the sweep again to submit only the missing shards", 1, true), out)
    local again
    again, rc = sh(ENV .. SWEEP .. FAST .. "--wait --slurm-dir " .. dir)
    assert.equal(0, rc, again)
    assert.truthy(again:find("Slurm: 4 shards (3 kept from earlier runs, 1 submitted)", 1, true), again)
    assert.truthy(assert(io.open(dir .. "/array.sbatch")):read("*a"):find("#SBATCH --array=1\n", 1, true))
    assert.same(identity(root .. "/host_local.json"), identity(dir .. "/slurm_host.json"))
  end)

  slurm_it("runs make run's 24-point sweep through Slurm, compile-only here: the rows of a local run", function()
    local dir = root .. "/tma"
    local t0 = cuasync.now_ns()
    local out, rc = sh(("%s luajit examples/pipeline_tma.lua --inflight 0 --slurm 4 --slurm-gpus %d --slurm-dir %s --out %s"):format(
      ENV, H.gpu and 1 or 0, dir, root))
    local wall = tonumber(cuasync.now_ns() - t0) / 1e9
    assert.equal(0, rc, out)
    assert.truthy(out:find("24 points:", 1, true), out)
    print(("# slurm: make run's 24-point sweep, 4 shards + merge through Slurm in %.1f s"):format(wall))
    os.execute("mkdir -p " .. root .. "/local")
    out, rc = sh(("%s luajit examples/pipeline_tma.lua --inflight 0 --out %s/local"):format(ENV, root))
    assert.equal(0, rc, out)
    assert.same(identity(root .. "/local/pipeline_tma.json"), identity(dir .. "/pipeline_tma.json"))
  end)

  slurm_it("names bad input: a partition Slurm rejects, a directory of another sweep; --dry-run submits nothing", function()
    local out, rc = sh(ENV .. SWEEP .. FAST .. "--partition nope --slurm-dir " .. root .. "/bad")
    assert.equal(1, rc, out)
    assert.truthy(out:find("sbatch refused the job array: sbatch: error: invalid partition specified: nope", 1, true), out)
    out, rc = sh(ENV .. SWEEP .. FAST .. "--dry-run --slurm-dir " .. root .. "/dry")
    assert.equal(0, rc, out)
    assert.truthy(out:find("#SBATCH --array=0-3", 1, true) and out:find("dry run: nothing submitted (4 of 4 shards would be)", 1, true), out)
    assert.equal("", (sh(ENV .. "squeue -h")))
    out, rc = sh(ENV .. SWEEP .. "--slurm --shards 2 --gpus-per-task 0 --slurm-dir " .. root .. "/host")
    assert.equal(1, rc, out)
    assert.truthy(out:find("holds the shards of another sweep, or of another shard count (4 shards of slurm_host)", 1, true), out)
  end)

  -- issue 41's defects against this Slurm (the stand-ins for sbatch are in bad_input_spec.lua)
  slurm_it("defect 4: the default 4 shards on a 3-point sweep complete, one shard per point; a rerun submits nothing", function()
    local dir = root .. "/few"
    local s = H.tmpdir() .. "/few.lua"
    H.write(s, 'return { name = "few", host = true, rounds = 1, reps = 1, params = { k = { 1, 2, 3 } }, '
      .. 'build = function(p) return { run = function() end, bytes = 8 * p.k } end }\n')
    local out, rc = sh(ENV .. "luajit bin/cuasync sweep " .. s .. " --slurm --gpus-per-task 0 --poll-seconds 0.2 --quiet --wait --slurm-dir " .. dir)
    assert.equal(0, rc, out)
    assert.truthy(out:find("note: 4 shards asked for, but the sweep has 3 points: 3 shards, one point each", 1, true), out)
    assert.truthy(out:find("3 points: 3 measured, 0 pruned, 0 failed, 0 skipped", 1, true), out)
    assert.is_nil(out:find("INCOMPLETE", 1, true), out)
    out, rc = sh(ENV .. "luajit bin/cuasync sweep " .. s .. " --slurm --gpus-per-task 0 --quiet --slurm-dir " .. dir)
    assert.equal(0, rc, out)
    assert.truthy(out:find("Slurm: 3 shards (3 kept from earlier runs, 0 submitted)", 1, true), out)
  end)

  slurm_it("defect 8: the default --gpus-per-task 1 on a cluster without GPU gres says what to do", function()
    local s = H.tmpdir() .. "/gpu.lua"
    H.write(s, 'return { name = "gres", rounds = 1, reps = 1, params = { k = { 1, 2 } }, build = function() return { run = function() end } end }\n')
    local out, rc = sh(ENV .. "luajit bin/cuasync sweep " .. s .. " --slurm --quiet --slurm-dir " .. root .. "/gres")
    assert.equal(1, rc, out)
    assert.truthy(out:find("Invalid generic resource (gres) specification: the array asks for 1 GPU per task (slurm.gpus_per_task, --gpus-per-task) and the cluster, or its partition, offers no gres/gpu", 1, true), out)
    assert.truthy(out:find("GresTypes=gpu in slurm.conf, Gres=gpu:N on the node's NodeName line, and a gres.conf", 1, true), out)
  end)
end)

describe("Slurm sweeps without a Slurm", function()
  it("run the single-node recipe docs/sweeps.md shows: slurm.sh reads its blocks, and the gres lines it writes are the ones the error names", function()
    -- slurm.sh holds no recipe of its own: it runs the page's blocks
    local sh_text = assert(io.open("spec/support/slurm.sh")):read("*a")
    assert.is_nil(sh_text:find("SlurmctldHost", 1, true))
    assert.is_nil(sh_text:find("apt-get install", 1, true))
    local blocks = {}
    for _, name in ipairs({ "install", "up", "down" }) do
      local out, rc = sh("bash spec/support/slurm.sh block " .. name)
      assert.equal(0, rc, out)
      blocks[name] = out
    end
    assert.truthy(blocks.install:find("apt-get install -y slurmctld slurmd munge", 1, true), blocks.install)
    assert.truthy(blocks.down:find('kill "$(cat "$DIR/$p.pid")"', 1, true), blocks.down)
    local _, rc = sh("bash spec/support/slurm.sh block nope")
    assert.equal(4, rc)
    -- the up block, run with stand-ins for the daemons: the slurm.conf and gres.conf it writes
    -- with 2 GPUs and with none
    local bin, dir = H.tmpdir(), H.tmpdir()
    for name, body in pairs({ munged = "exit 0", slurmctld = "exit 0", slurmd = "exit 0", sleep = "exit 0",
                              sinfo = "echo idle", hostname = "echo node1" }) do
      H.write(bin .. "/" .. name, "#!/bin/sh\n" .. body .. "\n")
      os.execute("chmod +x " .. bin .. "/" .. name)
    end
    local function up(gpus)
      local d = dir .. "/g" .. gpus
      local out, code = sh(("PATH=%s:$PATH DIR=%s PORT=23456 GPUS=%d bash spec/support/slurm.sh block up > %s/up.sh && PATH=%s:$PATH DIR=%s PORT=23456 GPUS=%d bash %s/up.sh"):format(
        bin, d, gpus, dir, bin, d, gpus, dir))
      assert.equal(0, code, out)
      return H.read(d .. "/slurm.conf"), H.read(d .. "/gres.conf")
    end
    local conf, gres = up(2)
    assert.truthy(conf:find("\nGresTypes=gpu\n", 1, true), conf)
    assert.truthy(conf:find("\nNodeName=node1 CPUs=%d+ Gres=gpu:2 State=UNKNOWN\n"), conf)
    assert.truthy(conf:find("\nSlurmctldPort=23456\nSlurmdPort=23457\n", 1, true), conf)
    assert.equal("Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n", gres)
    conf, gres = up(0)
    assert.is_nil(conf:find("Gres", 1, true))
    assert.is_nil(gres)
    -- the refusal's hint names those lines
    local hint = require("cuasync.tools.sweep.slurm.submit").GRES_HINT
    for _, line in ipairs({ "GresTypes=gpu", "Gres=gpu:N", "NodeName", "Name=gpu File=/dev/nvidia0", "A single-node Slurm" }) do
      assert.truthy(hint:find(line, 1, true), line)
    end
  end)

  it("say how to install sbatch; refuse bad options by name; exit 2 on usage errors", function()
    local bin = H.tmpdir()
    os.execute(("ln -s %s %s/luajit"):format((sh("command -v luajit")):gsub("%s+$", ""), bin))
    local out, rc = sh(("PATH=%s %s/luajit bin/cuasync sweep spec/support/slurm_sweep.lua --slurm --slurm-dir %s/x"):format(bin, bin, bin))
    assert.equal(1, rc, out)
    assert.truthy(out:find("sbatch is not on PATH: install Slurm's client (Debian: apt-get install slurm-client)", 1, true), out)
    out, rc = sh(SWEEP .. "--slurm --shards 0")
    assert.equal(2, rc, out)
    assert.truthy(out:find("--shards 0 must be an integer in 1..100000", 1, true), out)
    out, rc = sh(SWEEP .. "--shards 2")
    assert.equal(2, rc, out)
    assert.truthy(out:find("--shards needs --slurm", 1, true), out)
    out, rc = sh(SWEEP .. "--slurm --shard 1/2")
    assert.equal(2, rc, out)
    local S = cuasync.sweep{ name = "slurm_opts", host = true, params = { a = { 1 } }, build = function() return { run = function() end } end }
    for _, case in ipairs({
      { { shards = 0 }, "slurm.shards must be an integer in 1..100000 (got 0)" },
      { { shard = 2 }, "unknown field 'shard' in slurm" },
      { { time = "1h" }, 'slurm.time must be a Slurm time limit: "minutes", "MM:SS", "HH:MM:SS" or "D-HH[:MM[:SS]]" (got "1h")' },
      { { sbatch_args = { "exclusive" } }, "slurm.sbatch_args[1] must be one sbatch option starting with '-' (got \"exclusive\")" },
      { { dir = "a b" }, "slurm.dir must hold no spaces" },
      { { wait = 1 }, "slurm.wait must be a boolean (got 1)" },
    }) do
      local ok, err = pcall(S.run, S, { slurm = case[1] })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cuasync.sweep.run: " .. case[2], 1, true), tostring(err))
    end
  end)

  it("names a job Slurm no longer knows, and a shard file of another sweep in a merge", function()
    local dir = H.tmpdir()
    local S = cuasync.sweep{ name = "slurm_vanish", host = true, params = { a = { 1, 2 } }, build = function() return { run = function() end } end }
    local q = slurm.queue
    local saved = { which = q.which, submit = q.submit, queued = q.queued, final = q.final, cancel = q.cancel }
    local ids = { "41", "42" }
    q.which = function(name) return "/usr/bin/" .. name end
    q.submit = function() return table.remove(ids, 1) end
    q.queued = function() return {} end   -- not in the queue,
    q.final = function() return nil end   -- and not known to scontrol or sacct
    q.cancel = function() end
    local ok, err = pcall(S.run, S, { slurm = { shards = 2, wait = true, dir = dir, poll_s = 0.01 } })
    for k, v in pairs(saved) do q[k] = v end
    assert.is_false(ok)
    assert.truthy(tostring(err):find("shard 1/2 (array index 0, job 41_0) vanished: Slurm no longer knows job 41_0", 1, true), tostring(err))
    -- a shard of another sweep in a merge
    local A = cuasync.sweep{ name = "one", host = true, params = { a = { 1 } }, build = function() return { run = function() end } end }
    local B = cuasync.sweep{ name = "two", host = true, params = { a = { 1 } }, build = function() return { run = function() end } end }
    A:run{ quiet = true, force = true }:json(dir .. "/a.json")
    B:run{ quiet = true, force = true }:json(dir .. "/b.json")
    ok, err = pcall(require("cuasync.tools.sweep").merge, { dir .. "/a.json", dir .. "/b.json" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("b.json is a result of sweep 'two' (params a), not of 'one' (params a)", 1, true), tostring(err))
  end)
end)
