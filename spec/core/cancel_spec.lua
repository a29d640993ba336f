-- Cancel from the host: a watched kernel over its time budget (timeout_ms), or at a Ctrl-C while
-- a sweep runs, has its watchdog abort word raised from the host (a copy on a stream of its
-- own); its watched waits leave through PTX exit and the wait raises a Cancelled error, and the
-- next kernel runs in the same process. In a sweep the row is `cancelled` and the sweep goes on;
-- Ctrl-C twice stops it with its rows kept.
local ffi = require("ffi")
local cuasync = require("cuasync")
local H = require("helper")
local native = require("cuasync.native")
local cancel = require("cuasync.cancel")
local text = require("cuasync.tools.report.text")
local t4 = require("cuasync.tools.report.t4")
require("cuasync.cdef.signal")
pcall(ffi.cdef, "int raise(int sig);")

local C = native.C
local SIGINT = 2
local make_sweep = dofile("spec/support/cancel_sweep.lua")

local sh = H.sh

local function wait_file(path, seconds)
  for _ = 1, seconds * 20 do
    local f = io.open(path)
    if f then f:close() return true end
    os.execute("sleep 0.05")
  end
  return false
end

describe("cancel from the host", function()
  local gpu_it = H.gpu_it(it, pending)

  it("counts Ctrl-C while a sweep runs, nested, and forgets it after", function()
    assert.equal(0, C.cuasync_interrupt_begin())
    assert.equal(0, C.cuasync_interrupt_begin())
    ffi.C.raise(SIGINT)
    ffi.C.raise(SIGINT)
    assert.equal(2, C.cuasync_interrupt_count())
    C.cuasync_interrupt_end()
    assert.equal(2, C.cuasync_interrupt_count())   -- still inside the outer begin
    C.cuasync_interrupt_end()
    assert.equal(0, C.cuasync_interrupt_count())
  end)

  it("names a cancelled row in the table, the counts and T4", function()
    local e = cancel.error("synchronize", "timeout", 312.4, 300, { { labels = { "'planted'" } } })
    assert.is_true(cancel.is_cancelled(e) and cuasync.is_cancelled(e))
    assert.equal("cuasync.synchronize: cancelled after 312 ms (over timeout_ms = 300): the watchdog's abort word was raised from the host and kernel 'planted' left its watched waits; the GPU is free for the next launch", tostring(e))
    local S = { order = { "v" }, unit = "GB/s", rows = {
      { index = 1, params = { v = 1 }, kind = "measured", ms = 1, gbps = 2, verified = true },
      { index = 2, params = { v = 2 }, kind = "cancelled", reason = tostring(e), elapsed_ms = 312.4 } } }
    local out = text.text(S)
    assert.truthy(out:find("2 points: 1 measured, 0 pruned, 0 failed, 0 skipped, 1 cancelled", 1, true), out)
    assert.truthy(out:find("#2 cancelled: cuasync.synchronize: cancelled after 312 ms", 1, true), out)
    assert.equal("timeout", t4.invalidity(S.rows[2]))
  end)

  gpu_it("cancels a watched kernel over timeout_ms within 50 ms of it, and the next kernel verifies", function()
    local S = make_sweep{ timeout_ms = 300, name = "cancel_timeout" }
    S:run{ quiet = true, force = true }
    local r = S.rows
    assert.equal("measured", r[1].kind, r[1].reason)
    assert.equal("cancelled", r[2].kind, r[2].reason)
    assert.equal("measured", r[3].kind, r[3].reason)
    assert.is_true(r[1].verified and r[3].verified)
    assert.truthy(r[2].reason:find("cancelled after %d+ ms %(over timeout_ms = 300%)"), r[2].reason)
    assert.truthy(r[2].elapsed_ms >= 300 and r[2].elapsed_ms <= 350, tostring(r[2].elapsed_ms))
    print(("# cancel: a watched kernel over timeout_ms = 300 was cancelled after %.1f ms (%.1f ms past its budget)"):format(
      r[2].elapsed_ms, r[2].elapsed_ms - 300))
  end)

  gpu_it("Ctrl-C cancels the running watched kernel and the sweep goes on; twice stops it, its rows written", function()
    local dir = H.tmpdir()
    local script = dir .. "/s.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      package.cpath = "build/?.so;" .. package.cpath
      local twice = arg[1] == "2"
      local S = dofile("spec/support/cancel_sweep.lua"){ timeout_ms = 30000, marker = %q, name = "cancel_int_" .. arg[1],
                                                         hangs = twice and { 2, 3 } or { 2 } }
      S:run{ quiet = true, force = true }
      S:json(%q .. "/" .. arg[1] .. ".json")
      print(S:text())
    ]]):format(dir .. "/marker", dir))
    f:close()
    -- once: variant 2 hangs, Ctrl-C cancels it, 3 and 4 run. Twice: 2 and 3 hang, each Ctrl-C
    -- cancels the one running (a second press a person makes comes later than the first one's
    -- cancel), and the second stops the sweep: 4 is not run.
    for _, times in ipairs({ 1, 2 }) do
      local pid = sh(("luajit %s %d > %s/out%d 2>&1 & echo $!"):format(script, times, dir, times)):match("(%d+)")
      local t0
      for k = 1, times do
        assert.is_true(wait_file(dir .. "/marker" .. (k + 1), 60), ("hung variant %d was never launched"):format(k + 1))
        os.remove(dir .. "/marker" .. (k + 1))
        os.execute("sleep 0.3")
        t0 = t0 or cuasync.now_ns()
        os.execute("kill -INT " .. pid)
      end
      assert.is_true(wait_file(dir .. "/" .. times .. ".json", 60), "the sweep wrote no rows")
      os.execute("sleep 0.2")
      local out = assert(io.open(("%s/out%d"):format(dir, times))):read("*a")
      local doc = require("cuasync.tools.json").decode_file(dir .. "/" .. times .. ".json")
      assert.equal("cancelled", doc.rows[2].kind, out)
      assert.truthy(doc.rows[2].reason:find("(Ctrl-C)", 1, true), out)
      if times == 1 then
        assert.equal("measured", doc.rows[3].kind, out)
        assert.equal("measured", doc.rows[4].kind, out)
        assert.truthy(out:find("4 points: 3 measured, 0 pruned, 0 failed, 0 skipped, 1 cancelled", 1, true), out)
      else
        assert.equal("cancelled", doc.rows[3].kind, out)
        assert.equal("skipped", doc.rows[4].kind, out)
        assert.equal("not run: the sweep was stopped by Ctrl-C (twice)", doc.rows[4].reason)
      end
      print(("# cancel: Ctrl-C x%d: the sweep wrote its rows %.2f s after the first"):format(times, tonumber(cuasync.now_ns() - t0) / 1e9))
    end
  end)
end)
