-- A run that ends early, in one place: Ctrl-C while a sweep runs, and what a run stopped before
-- every candidate was evaluated says of itself.
--   The count. native/cuasync_signal.c counts SIGINT between begin and finish. Once cancels the
--   running watched kernel (stream.poll); twice stops the sweep at its next poll (M.requested:
--   between points, between batches), which returns its rows.
--   Code the sweep cannot poll. A variant's own code (where, program, build, poison, run,
--   verify; a host sweep's timed rounds) may never return: it runs through M.pcall, and a second
--   Ctrl-C while it runs, or a third at any time, ends the process (status 130) after writing
--   what M.keep last kept: the table on stdout, the run's on_stop reports, a line on stderr
--   naming the variant. M.keep renders them as they would read had the run stopped there, at
--   the start of each batch (at most a tenth of the run's time spent on it).
--   The rule. M.settle: the candidates not evaluated are skipped, saying why, and a run that
--   stopped (Ctrl-C, a budget, the strategy) with any of them is incomplete, R.stopped saying
--   why and how many; Ctrl-C twice leaves it incomplete wherever it landed.
local ffi = require("ffi")
local native = require("cuasync.native")
local streams = require("cuasync.stream")
local report = require("cuasync.tools.report")
local row = require("cuasync.tools.sweep.row")
require("cuasync.cdef.signal")

local C = native.C
local M = { REASON = "stopped by Ctrl-C (twice)", NOT_RUN = "not run: the sweep was stopped by Ctrl-C (twice)",
            FORMATS = { csv = true, json = true, t4 = true, text = true } }

function M.begin() C.cuasync_interrupt_begin() end
function M.finish() C.cuasync_interrupt_end() end

-- Ctrl-C twice (or more) since the run began: stop at this poll.
function M.requested() return C.cuasync_interrupt_count() >= 2 end

-- pcall(f, ...) as code the sweep cannot poll: label says what it is ("variant #3 (k=2) run()").
local function leave(...)
  C.cuasync_interrupt_inside(nil)
  return ...
end
function M.pcall(label, f, ...)
  C.cuasync_interrupt_inside(label .. ", which did not return")
  return leave(pcall(f, ...))
end

-- The label of a variant's step.
function M.label(S, r, step) return ("variant #%d (%s) %s"):format(r.index, row.params_text(S.order, r.params), step) end

-- The rule: rows by index, the candidates, seen[i] (evaluated), why the search stopped (nil:
-- the strategy was done) and the reason a candidate never chosen gets. Sets R.complete,
-- R.stopped and R.interrupted.
function M.settle(R, by, candidates, seen, why, unchosen)
  if M.requested() then why = M.REASON end
  local missing = 0
  for _, i in ipairs(candidates) do
    local r = by[i]
    if seen[i] == nil and r.reason ~= M.NOT_RUN then row.set(r, "skipped", why == M.REASON and M.NOT_RUN or unchosen) end
    if seen[i] == nil or r.reason == M.NOT_RUN then missing = missing + 1 end
  end
  R.complete = why ~= M.REASON and missing == 0
  R.interrupted = why == M.REASON or nil
  R.stopped = not R.complete and ("%s: %d of %d candidate points not %s"):format(why or "the strategy stopped", missing, #candidates,
    why == M.REASON and "run" or "sampled") or nil
end

-- -- What a hard stop writes ------------------------------------------------------------------

local last_cost, last_at = 0, 0

-- Keep what a hard stop writes now: S's rows as they would be had the run stopped here, the
-- candidates in `pending` (a set of indices) not run. outputs: { { format, path } } (the
-- run's on_stop). Skipped while keeping costs more than a tenth of the time since the last.
function M.keep(S, R, candidates, pending, outputs, force)
  local t0 = streams.now_ns() / 1e9
  if not force and last_cost > 0.005 and t0 - last_at < 10 * last_cost then return end
  local rows, by, view_R = {}, {}, {}
  for i, r in ipairs(R.rows) do
    local copy = { index = r.index, params = r.params }
    if not pending[r.index] then   -- as the run leaves it: without its program and its cost (search.lua)
      for k, v in pairs(r) do copy[k] = v end
      copy.prog, copy.cost = nil, nil
    end
    rows[i] = pending[r.index] and row.set(copy, "skipped", M.NOT_RUN) or copy
    by[r.index] = rows[i]
  end
  for k, v in pairs(R) do view_R[k] = v end
  local seen = {}
  for _, i in ipairs(candidates) do if not pending[i] then seen[i] = true end end
  view_R.rows, view_R.best = rows, row.best(rows)
  local view = setmetatable({ rows = rows, result = view_R, best = view_R.best }, { __index = S })
  M.settle(view_R, by, candidates, seen, M.REASON)
  local files, paths = {}, {}
  for _, out in ipairs(outputs or {}) do
    files[#files + 1] = { path = out[2], data = report.handler(out[1]).render(view) }
    paths[#paths + 1] = out[2]
  end
  local text = report.handler("text").render(view)
  files[#files + 1] = { fd = 1, data = "\n" .. text }
  files[#files + 1] = { fd = 2, data = ("cuasync.sweep.run: stopped by Ctrl-C in \1: the rows measured before it are printed%s (exit 130)\n"):format(
    #paths > 0 and (" and written to " .. table.concat(paths, ", ")) or "") }
  local c = ffi.new("cuasync_stop_file[?]", #files)
  for i, f in ipairs(files) do
    c[i - 1].path, c[i - 1].fd, c[i - 1].data, c[i - 1].len = f.path, f.fd or -1, f.data, #f.data
  end
  C.cuasync_interrupt_keep(c, #files)   -- a copy: `files` may go (out of memory: the last one stays)
  last_at = streams.now_ns() / 1e9
  last_cost = last_at - t0
end

return M
