-- lua/cuasync/fs.lua, the one home for files: reads, checked writes (a full disk is an error
-- naming the path and the reason, never success), atomic replacement, directories, what a path
-- is, listings and usage, locks, and the sealed JSON format (with the sweep store's version-3
-- entries still checking). Scratch files live under H.tmpdir().
local H = require("helper")
local fs = require("cuasync.fs")
local isolate = require("cuasync.tools.isolate")
local cuasync = require("cuasync")

describe("fs", function()
  describe("read and write", function()
    it("round-trips bytes, NULs and all, and appends", function()
      local path = H.tmpdir() .. "/a.bin"
      local data = "a\0b\n" .. ("\255"):rep(70000)
      assert.is_true(fs.write(path, data))
      assert.equal(data, fs.read(path))
      assert.equal("a\0b", fs.read(path, 3))
      assert.is_true(fs.write(path, "short"))          -- truncated, not overwritten in place
      assert.is_true(fs.append(path, "+more"))
      assert.equal("short+more", fs.read(path))
      assert.is_true(fs.write(path, ""))
      assert.equal("", fs.read(path))
    end)

    it("refuses a full disk with the reason, for write, append and write_atomic", function()
      assert.same({ nil, "cannot write /dev/full: No space left on device" }, { fs.write("/dev/full", "x") })
      assert.same({ nil, "cannot write /dev/full: No space left on device" }, { fs.append("/dev/full", "x") })
      -- write_atomic's temporary file is where the disk fills: a symlink to /dev/full stands in
      pcall(require("ffi").cdef, "int getpid(void);")
      local dir = H.tmpdir()
      local tmp = ("%s/e.json.tmp.%d"):format(dir, require("ffi").C.getpid())
      assert.equal(0, select(2, H.sh(("ln -s /dev/full %s"):format(isolate.shell_quote(tmp)))))
      local ok, why = fs.write_atomic(dir .. "/e.json", "data")
      assert.is_nil(ok)
      assert.truthy(why:find("cannot write " .. dir .. "/e.json: No space left on device", 1, true), why)
      assert.equal("missing", fs.kind(dir .. "/e.json"))
    end)

    it("names what cannot be read, and a missing directory of a write", function()
      local dir = H.tmpdir()
      assert.same({ nil, "cannot read " .. dir .. "/none: No such file or directory" }, { fs.read(dir .. "/none") })
      assert.same({ nil, "cannot read " .. dir .. ": Is a directory" }, { fs.read(dir) })
      for _, f in ipairs({ fs.write, fs.write_atomic }) do
        assert.same({ nil, ("cannot write %s/no/x: the directory %s/no does not exist"):format(dir, dir) }, { f(dir .. "/no/x", "d") })
      end
      assert.has_error(function() fs.write(dir .. "/x", 7) end, "cuasync.fs.write: data must be a string (got number)")
      assert.has_error(function() fs.read(nil) end, "cuasync.fs.read: path must be a string (got nil)")
    end)

    it("replaces a file atomically and leaves no temporary file", function()
      local dir = H.tmpdir()
      assert.is_true(fs.write_atomic(dir .. "/f", "one"))
      assert.is_true(fs.write_atomic(dir .. "/f", "two"))
      assert.equal("two", fs.read(dir .. "/f"))
      assert.same({ "f" }, fs.list(dir))
    end)
  end)

  describe("directories and kinds", function()
    it("mkdirs makes every level, and says why it cannot", function()
      local dir = H.tmpdir()
      assert.is_true(fs.mkdirs(dir .. "/a/b/c"))
      assert.is_true(fs.mkdirs(dir .. "/a/b/c"))           -- already there
      assert.equal("dir", fs.kind(dir .. "/a/b/c"))
      assert.is_true(fs.write(dir .. "/file", "x"))
      local ok, why = fs.mkdirs(dir .. "/file/sub")
      assert.is_nil(ok)
      assert.truthy(why:find(dir .. "/file", 1, true), why)
    end)

    it("kind tells a file (with its size), a directory, a missing path and anything else", function()
      local dir = H.tmpdir()
      fs.write(dir .. "/f", "12345")
      assert.same({ "file", 5 }, { fs.kind(dir .. "/f") })
      assert.equal("dir", fs.kind(dir))
      assert.equal("missing", fs.kind(dir .. "/none"))
      assert.equal("other", fs.kind("/dev/null"))
      assert.is_true(fs.mkfifo(dir .. "/q"))
      assert.equal("other", fs.kind(dir .. "/q"))
      assert.is_nil((fs.mkfifo(dir .. "/q")))              -- exists
    end)

    it("lists names sorted, by suffix, past the old 512-name limit; usage counts files and bytes", function()
      local dir = H.tmpdir()
      for i = 1, 600 do fs.write(("%s/n%04d.json"):format(dir, i), ("x"):rep(i % 7)) end
      fs.write(dir .. "/other.txt", "abc")
      fs.mkdirs(dir .. "/sub/deeper")
      fs.write(dir .. "/sub/deeper/z.json", "0123456789")
      local names = fs.list(dir, ".json")
      assert.equal(600, #names)
      assert.equal("n0001.json", names[1])
      assert.equal("n0600.json", names[600])
      assert.same({ "n0001.json", "n0002.json", "n0003.json" }, { names[1], names[2], names[3] })
      assert.equal(602, #fs.list(dir))                     -- with the .txt and the sub directory
      local bytes = 3 + 10
      for i = 1, 600 do bytes = bytes + i % 7 end
      assert.same({ 602, bytes }, { fs.usage(dir) })
      assert.same({ nil, "cannot list " .. dir .. "/none: No such file or directory" }, { fs.list(dir .. "/none") })
      assert.is_nil((fs.usage(dir .. "/none")))
    end)

    it("remove: gone when removed or already missing; rename; a reason otherwise", function()
      local dir = H.tmpdir()
      fs.write(dir .. "/f", "x")
      assert.is_true(fs.rename(dir .. "/f", dir .. "/g"))
      assert.equal("missing", fs.kind(dir .. "/f"))
      assert.is_true(fs.remove(dir .. "/g"))
      assert.is_true(fs.remove(dir .. "/g"))
      fs.mkdirs(dir .. "/full/x")
      local ok, why = fs.remove(dir .. "/full")
      assert.is_nil(ok)
      assert.truthy(why:find("cannot remove " .. dir .. "/full: ", 1, true), why)
      assert.same({ nil, ("cannot rename %s/none to %s/y: No such file or directory"):format(dir, dir) },
                  { fs.rename(dir .. "/none", dir .. "/y") })
    end)
  end)

  describe("lock", function()
    it("holds another process off until unlock (idempotent)", function()
      local path = H.tmpdir() .. "/l.lock"
      local lock = assert(fs.lock(path))
      local code = ([[
        local t0 = require("cuasync").now_ns()
        local l = assert(require("cuasync.fs").lock(%q))
        l:unlock()
        print("took", tonumber(require("cuasync").now_ns() - t0) / 1e9)
      ]]):format(path)
      local ok, out, rc = isolate.run(code, { timeout_s = 2 })
      assert.is_false(ok, out)
      assert.equal(124, rc, out)                            -- still waiting when the time ran out
      lock:unlock()
      lock:unlock()
      ok, out = isolate.run(code, { timeout_s = 30 })
      assert.is_true(ok, out)
      assert.truthy(out:find("took", 1, true), out)
      local ok2, why = fs.lock(H.tmpdir() .. "/no/l.lock")
      assert.is_nil(ok2)
      assert.truthy(why:find("cannot open the lock file", 1, true), why)
    end)
  end)

  describe("sealed JSON", function()
    it("round-trips a sealed document and refuses one with a flipped byte", function()
      local path = H.tmpdir() .. "/s.json"
      local doc = { name = "x", n = 3, ratio = 0.1 + 0.2, list = { 1, 2, "three" }, nested = { ok = true } }
      assert.is_true(fs.write_json(path, doc, { sealed = true, atomic = true }))
      local back = assert(fs.read_json(path, { sealed = true }))
      assert.same(doc, back)                                 -- numbers exact, the sum taken off
      local text = fs.read(path)
      assert.truthy(text:find('"sum":"%x+"'), text)
      local flipped = text:gsub('"n":3', '"n":4')
      assert.are_not.equal(text, flipped)
      fs.write(path, flipped)
      assert.same({ nil, "its checksum does not match: damaged, or not written sealed" }, { fs.read_json(path, { sealed = true }) })
      assert.equal(4, fs.read_json(path).n)                  -- read unsealed, it is only JSON
      fs.write(path, text:sub(1, -5))
      assert.truthy(select(2, fs.read_json(path, { sealed = true })):find("^not JSON: "))
      fs.write(path, "")
      assert.same({ nil, "empty: truncated" }, { fs.read_json(path) })
      assert.has_error(function() fs.write_json(path, doc, { seal = true }) end, "cuasync.fs.write_json: unknown field 'seal' in opts (fields: atomic, pretty, sealed)")
    end)

    it("seal and sealed: the sweep store's version-3 entries, sealed before fs.lua, still check", function()
      -- an entry as tools/sweep/store.lua sealed it before this module existed
      local text = '{"gbps":3300,"kind":"measured","ms":0.125,"params":{"mode":"tma","n":4},"sum":'
                   .. '"a911cc0afc97a4891d484dab6842424dcc3980025e32466f0944c81ff99c2fe4","times":[0.125,0.13],"verified":true}'
      local e = require("cuasync.json").decode(text)
      assert.is_true(fs.sealed(e))
      local again = fs.seal({ kind = "measured", ms = 0.125, gbps = 3.3e3, verified = true, params = { n = 4, mode = "tma" }, times = { 0.125, 0.13 } })
      assert.equal(e.sum, again.sum)
      e.ms = 0.126
      assert.is_false(fs.sealed(e))
      assert.is_false(fs.sealed({ kind = "measured" }))
      assert.is_false(fs.sealed("x"))
      assert.equal(cuasync.cache and require("cuasync.cache").sha256("abc"), fs.sha256("abc"))
      assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", fs.sha256("abc"))
    end)
  end)
end)

describe("reports on a full disk", function()
  it("csv, json, t4 and text raise by name with the reason; a missing directory is named", function()
    local sweep = require("cuasync.tools.sweep")
    local S = sweep{ name = "full_disk", host = true, rounds = 1, reps = 1, params = { n = { 1, 2 } },
      build = function() return { run = function() end } end }
    S:run{ quiet = true, force = true }
    for _, format in ipairs({ "csv", "json", "t4", "text" }) do
      assert.has_error(function() S:write(format, "/dev/full") end,
        ("cuasync.sweep.%s: cannot write /dev/full: No space left on device"):format(format))
    end
    local dir = H.tmpdir()
    assert.has_error(function() S:write("json", dir .. "/no/r.json") end,
      ("cuasync.sweep.json: cannot write %s/no/r.json: the directory %s/no does not exist"):format(dir, dir))
    assert.equal(dir .. "/r.csv", S:write("csv", dir .. "/r.csv"))
    assert.truthy(fs.read(dir .. "/r.csv"):find("^index,n,kind"))
    assert.equal(2, #S.rows)
  end)
end)
