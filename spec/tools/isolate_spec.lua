-- lua/cuasync/tools/isolate.lua, the one place that starts a process: command (exit codes,
-- output whole, environment, time limit), pipe_writer, which, cores and sleep; run and spawn are
-- used throughout the other specs.
local H = require("helper")
local isolate = require("cuasync.tools.isolate")
local fs = require("cuasync.fs")
local cuasync = require("cuasync")

describe("isolate", function()
  describe("command", function()
    it("gives ok, stdout and stderr together, and the exit code", function()
      assert.same({ true, "out\nerr\n", 0 }, { isolate.command({ "sh", "-c", "echo out; echo err >&2" }) })
      assert.same({ false, "failing\n", 3 }, { isolate.command({ "sh", "-c", "echo failing; exit 3" }) })
      assert.same({ false, "", 1 }, { isolate.command({ "false" }) })
      local ok, out, code = isolate.command({ "/no/such/command" })
      assert.is_false(ok)
      assert.equal(127, code)
      assert.truthy(out:find("/no/such/command", 1, true), out)
    end)

    it("quotes each word of an argv, runs a string as a shell line, keeps output without a newline", function()
      assert.same({ true, "a b\t'c' $HOME\n", 0 }, { isolate.command({ "printf", "%s\\t%s %s\\n", "a b", "'c'", "$HOME" }) })
      assert.same({ true, "no newline", 0 }, { isolate.command("printf 'no newline'") })
      assert.same({ true, "1\n2\n", 0 }, { isolate.command("echo 1; echo 2 # and a comment") })
      assert.same({ true, "", 0 }, { isolate.command("# only a comment") })
      assert.same({ true, "x\n", 0 }, { isolate.command("read line || echo x") })   -- stdin is empty, never the caller's
    end)

    it("sets the environment and stops at timeout_s (exit 124)", function()
      assert.same({ true, "v a l\n", 0 }, { isolate.command("echo $CUASYNC_T", { env = { CUASYNC_T = "v a l" } }) })
      local t0 = cuasync.now_ns()
      local ok, _, code = isolate.command({ "sleep", "30" }, { timeout_s = 1 })
      assert.is_false(ok)
      assert.equal(124, code)
      assert.truthy(tonumber(cuasync.now_ns() - t0) / 1e9 < 20)
    end)

    it("refuses a malformed call by name", function()
      assert.has_error(function() isolate.command({}) end, "cuasync.isolate.command: argv must name a command (got an empty list)")
      assert.has_error(function() isolate.command({ "echo", {} }) end, "cuasync.isolate.command: argv[2] must be a string or a number (got table)")
      assert.has_error(function() isolate.command("true", { time = 1 }) end, "cuasync.isolate.command: unknown field 'time' in opts (fields: env, timeout_s)")
      assert.has_error(function() isolate.command("true", { timeout_s = 0 }) end, "cuasync.isolate.command: opts.timeout_s must be a positive integer (got 0)")
    end)
  end)

  it("pipe_writer feeds a command's stdin; close waits for it", function()
    local path = H.tmpdir() .. "/piped"
    local w = assert(isolate.pipe_writer("cat > " .. isolate.shell_quote(path)))
    assert.truthy(w:write("one\n"))
    assert.truthy(w:flush())
    w:write("two\n")
    w:close()
    assert.equal("one\ntwo\n", fs.read(path))
  end)

  it("which finds a command on PATH, or says nil", function()
    local sh = isolate.which("sh")
    assert.truthy(sh and sh:find("/sh$"), tostring(sh))
    assert.is_nil(isolate.which("cuasync-no-such-command"))
    assert.is_nil(isolate.which("sh; echo x"))              -- one name, quoted: never a command line
  end)

  it("cores is a positive integer, the same each call", function()
    local n = isolate.cores()
    assert.is_true(type(n) == "number" and n >= 1 and n == math.floor(n), tostring(n))
    assert.equal(n, isolate.cores())
  end)

  it("sleep waits about that long, and refuses what is not a duration", function()
    local t0 = cuasync.now_ns()
    isolate.sleep(0.2)
    local s = tonumber(cuasync.now_ns() - t0) / 1e9
    assert.is_true(s >= 0.19 and s < 5, tostring(s))
    assert.has_error(function() isolate.sleep(-1) end, "cuasync.isolate.sleep: seconds must be a number in [0, 86400] (got -1)")
  end)
end)
