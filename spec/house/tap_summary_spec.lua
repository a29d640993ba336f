-- .ci/tap-summary.awk: the closing line CI and make test read, from busted's TAP output, on
-- planted outputs (CPU only).

-- The summary of a TAP text: its lines and its exit status.
local function summary(tap)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(tap)
  f:close()
  local p = assert(io.popen("awk -f .ci/tap-summary.awk " .. path .. "; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out
end

describe("tap-summary.awk", function()
  it("counts passed, failed and skipped results", function()
    local out = summary("ok 1 - a\nnot ok 2 - b\n# Failure message: x\nok 3 - # SKIP c\n1..3\n")
    assert.equal("1 passed, 1 failed, 1 skipped\nrc=1\n", out)
    assert.equal("2 passed, 0 failed, 0 skipped\nrc=0\n", summary("ok 1 - a\nok 2 - b\n1..2\n"))
  end)

  it("takes a result a spec's own output ran into (no newline before it), once", function()
    -- the H200's make test: a guide's io.write without a newline before busted's line
    assert.equal("3 passed, 0 failed, 0 skipped\nrc=0\n", summary("ok 1 - a\n0:0 0:0 ok 2 - b\nok 3 - c\n1..3\n"))
    assert.equal("1 passed, 1 failed, 0 skipped\nrc=1\n", summary("ok 1 - a\n0:0 not ok 2 - b\n1..2\n"))
    -- a spec printing text that looks like a result is not counted twice
    assert.equal("2 passed, 0 failed, 0 skipped\nrc=0\n", summary("ok 1 - a\nprinted: ok 1 - again\nok 2 - b\n1..2\n"))
  end)

  it("lets busted's own line win over text that looks like a result, and skips failure messages", function()
    -- "took 2 - 3": an "ok" inside a word is not a result
    assert.equal("1 passed, 1 failed, 0 skipped\nrc=1\n", summary("ok 1 - a\nstep took 2 - 3 ms\nnot ok 2 - b\n1..2\n"))
    assert.equal("2 passed, 1 failed, 0 skipped\nrc=1\n",
                 summary("ok 1 - a\nnot ok 2 - b\n# Failure message: x ok 3 - y\nok 3 - c\n1..3\n"))
    assert.equal("2 passed, 0 failed, 0 skipped\nrc=0\n", summary("ok 1 - a\nprinted: not ok 2 - x\nok 2 - b\n1..2\n"))
  end)

  it("counts a result the plan has and the output lacks as failed, and output without a plan", function()
    local out = summary("ok 1 - a\nok 2 - b\n1..4\n")
    assert.truthy(out:find("2 of the 4 results the plan counts are missing from the output: counted as failed", 1, true), out)
    assert.truthy(out:find("2 passed, 2 failed, 0 skipped\nrc=1\n", 1, true), out)
    -- one lost in the middle: the later ones still count as passed
    assert.truthy(summary("ok 1 - a\nok 3 - c\nok 4 - d\n1..4\n"):find("3 passed, 1 failed, 0 skipped\nrc=1\n", 1, true))
    -- busted cut off before its plan line (a time limit)
    out = summary("ok 1 - a\nok 2 - b\n")
    assert.truthy(out:find("no plan line (1..N) in the output: busted did not finish\n2 passed, 1 failed, 0 skipped\nrc=1\n", 1, true), out)
    assert.equal("no spec ran\n0 passed, 1 failed, 0 skipped\nrc=1\n", summary(""))
  end)
end)
