-- What examples/bench_graph_loop.lua adds beside its measured loop, checked without a GPU: the
-- --ablate variants' program (graph_loop.cu's text and the variants, through NVRTC) and option
-- check (examples/lib/example/graph_loop_ablations.lua), the --unroll option and the script's
-- no-GPU line (every kernel compiled), and the cuda.core peer's runner
-- (examples/lib/example/peer.lua) on stand-in python3 scripts: its result line read back, and
-- each way it fails said. The peer script itself (examples/peers/graph_while.py) must compile
-- under python3; where cuda.core does not import, running it says so (exit 2).
local cuasync = require("cuasync")
local H = require("helper")

package.path = "examples/lib/?.lua;" .. package.path
local ablation = require("example.graph_loop_ablations")

local PEER = "examples/peers/graph_while.py"

-- Run peer.run(script) in a fresh process whose PATH is path; -> its printed answer.
local function peer_in(path, script)
  local ok, out = H.luajit(([[
    package.path = "examples/lib/?.lua;" .. package.path
    require("example.checkout")
    local p, why = require("example.peer").run(%q, { "--iters", 3 }, 60)
    if not p then print("WHY " .. why) return end
    print(("OK %%s %%s %%s %%s %%s"):format(p.version, tostring(p.while_ms), p.host_ms, p.x_hex, tostring(p.while_why)))
  ]]):format(script), { PATH = path })
  assert(ok, out)
  return out
end

-- A directory for PATH with the tools a child process needs (luajit, env, timeout, sh) and, given
-- a shell body, an executable `python3` that runs it.
local function fake_python(body)
  local dir = H.tmpdir()
  for _, tool in ipairs({ "luajit", "env", "timeout", "sh" }) do
    local where, rc = H.sh("command -v " .. tool)
    assert(rc == 0, tool .. " is not on PATH")
    local _, ln = H.sh(("ln -s %s %s/%s"):format(where:gsub("%s+$", ""), dir, tool))
    assert.equal(0, ln)
  end
  if body then
    H.write(dir .. "/python3", "#!/bin/sh\n" .. body .. "\n")
    local _, rc = H.sh("chmod +x " .. dir .. "/python3")
    assert.equal(0, rc)
  end
  return dir
end

describe("bench_graph_loop's ablations and peer (CPU)", function()
  it("the ablations' variants compile with graph_loop.cu's own sweep (no GPU needed)", function()
    local ptx = ablation.program(cuasync, cuasync.kernels_dir()):ptx()
    for _, k in ipairs({ "jacobi", "jacobi_flag", "jacobi_fused", "jacobi_flag_fused", "copy_n", "count_cond", "count_flag",
                            "jacobi_lean", "jacobi_flag_lean" }) do
      assert.truthy(ptx:find(".entry " .. k .. "(", 1, true), k)
    end
    assert.truthy(ptx:find("cudaGraphSetConditional", 1, true))
  end)

  it("--ablate takes the names and all, and refuses another name saying which", function()
    assert.is_nil(ablation.check({ "fused", "host-nosync", "all" }))
    local why = ablation.check({ "fused", "nope" })
    assert.truthy(why:find("must be a comma list of fused, copy-kernel, ", 1, true) and why:find("(got nope)", 1, true), why)
    local out, rc = H.sh("luajit examples/bench_graph_loop.lua --ablate nope")
    assert.equal(2, rc, out)
  end)

  it("--unroll takes off or an integer >= 1; without a GPU the script compiles every kernel, jacobi_guarded too, and says so", function()
    for _, bad in ipairs({ "0", "2.5", "four" }) do
      local out, rc = H.sh("luajit examples/bench_graph_loop.lua --unroll " .. bad .. " 2>&1")
      assert.equal(2, rc, out)
      assert.truthy(out:find("--unroll " .. bad .. " is not off or an integer >= 1", 1, true), out)
    end
    if H.gpu then return end   -- with a GPU the script runs the benchmark: the lead runs it by hand
    local out, rc = H.sh("luajit examples/bench_graph_loop.lua --unroll 3 2>&1")
    assert.equal(0, rc, out)
    assert.truthy(out:find("^compiled graph_loop%.cu %(jacobi, jacobi_flag, jacobi_guarded, scale%) for sm_%w+ %(%d+ bytes%); runs skipped: "), out)
  end)

  it("the peer runner reads the result line, and says why where there is none", function()
    local line = '{"peer": "cuda.core", "version": "1.2.0", "device": "X", "sweeps": 3, "host_ms": 12.5, "body_ms": 9.0, "while_ms": null, '
      .. '"ratio": null, "x_hex": "00ff", "while_why": "NotImplementedError: no \\"while_loop\\""}'
    local out = peer_in(fake_python("echo 'noise on stdout'; printf '%s\\n' '" .. line .. "'"), "peers/graph_while.py")
    assert.truthy(out:find('OK 1.2.0 nil 12.5 00ff NotImplementedError: no "while_loop"', 1, true), out)
    -- its own error line and exit code
    out = peer_in(fake_python([[echo '{"peer": "cuda.core", "error": "cuda.core does not import: ModuleNotFoundError"}'; exit 2]]), "peers/graph_while.py")
    assert.truthy(out:find("WHY .*/python3 peers/graph_while%.py: cuda%.core does not import: ModuleNotFoundError %(exit 2%)"), out)
    -- no line: its last output
    out = peer_in(fake_python("echo 'Traceback: boom' >&2; exit 1"), "peers/graph_while.py")
    assert.truthy(out:find("it printed no result line; its last output: Traceback: boom (exit 1)", 1, true), out)
    -- no python3 at all
    out = peer_in(fake_python(nil), "peers/graph_while.py")
    assert.truthy(out:find("WHY python3 is not on PATH", 1, true), out)
  end)

  it("examples/peers/graph_while.py compiles under python3, and says why it cannot run where cuda.core is absent", function()
    local _, rc = H.sh("command -v python3")
    if rc ~= 0 then return pending("no python3 on this machine") end
    local dir = H.tmpdir()
    local out, code = H.sh(("python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' %s %s/g.pyc"):format(PEER, dir))
    assert.equal(0, code, out)
    local _, has = H.sh("python3 -c 'import cuda.core, numpy' 2>/dev/null")
    if has == 0 then return end   -- cuda.core is here: the benchmark runs it on a GPU
    out, code = H.sh("python3 " .. PEER .. " --iters 3")
    assert.equal(2, code, out)
    assert.truthy(out:find('^{"peer": "cuda.core", "error": "[%w.]+ does not import: '), out)
  end)
end)
