-- Cluster preflight with the driver's occupancy answers: a cluster larger than the kernel can
-- have (cuOccupancyMaxPotentialClusterSize), or one that can never be resident
-- (cuOccupancyMaxActiveClusters = 0), is refused before the launch with the limit that makes
-- it impossible. The messages are built by pure functions (pinned on the CPU by specs).
local M = {}

local function fmt(d) return ("{%d, %d, %d}"):format(d[1], d[2], d[3]) end

-- What limits the blocks of a kernel an SM holds. k = { threads, smem (dynamic + static), regs },
-- dev = { smem_per_sm, reserved_smem_per_block, max_threads_per_sm, regs_per_sm, max_blocks_per_sm }
-- (a device object has them all).
-- Returns blocks per SM by each limit and the name of the tightest.
function M.limiter(k, dev)
  local regs_per_block = math.ceil(k.regs * math.ceil(k.threads / 32) * 32 / 256) * 256
  local by = {
    ["shared memory"] = math.floor(dev.smem_per_sm / (k.smem + dev.reserved_smem_per_block)),
    threads = math.floor(dev.max_threads_per_sm / k.threads),
    registers = regs_per_block > 0 and math.floor(dev.regs_per_sm / regs_per_block) or math.huge,
    ["blocks per SM"] = dev.max_blocks_per_sm,
  }
  local name, least
  for _, n in ipairs({ "shared memory", "threads", "registers", "blocks per SM" }) do
    if not least or by[n] < least then name, least = n, by[n] end
  end
  return least, name, by
end

local function limit_text(name, k, dev)
  if name == "shared memory" then
    return ("shared memory: %d bytes per block (+%d reserved) of %d per SM"):format(k.smem, dev.reserved_smem_per_block, dev.smem_per_sm)
  elseif name == "threads" then
    return ("threads: %d per block of %d per SM"):format(k.threads, dev.max_threads_per_sm)
  elseif name == "registers" then
    return ("registers: %d per thread x %d threads of %d per SM"):format(k.regs, k.threads, dev.regs_per_sm)
  end
  return ("blocks: at most %d per SM"):format(dev.max_blocks_per_sm)
end

-- The cluster is larger than the kernel can have. i = { cluster, size, max, kernel, block, k, dev }
function M.too_large(i)
  local per_sm, name = M.limiter(i.k, i.dev)
  return ("cluster %s has %d blocks but kernel '%s' can have at most %d per cluster with block %s and %d bytes of shared memory (cuOccupancyMaxPotentialClusterSize; an SM holds %d such block%s, limited by %s)"):format(
    fmt(i.cluster), i.size, i.kernel, i.max, fmt(i.block), i.k.smem, per_sm, per_sm == 1 and "" or "s",
    limit_text(name, i.k, i.dev))
end

-- No cluster of this shape can ever be resident. i as above (max may be nil).
function M.never_resident(i)
  local per_sm, name = M.limiter(i.k, i.dev)
  if per_sm < 1 then
    return ("cuOccupancyMaxActiveClusters is 0 for cluster %s of kernel '%s': one block %s does not fit on an SM (%s)"):format(
      fmt(i.cluster), i.kernel, fmt(i.block), limit_text(name, i.k, i.dev))
  end
  return ("cuOccupancyMaxActiveClusters is 0 for cluster %s (%d blocks) of kernel '%s' with block %s and %d bytes of shared memory: an SM holds %d such block%s (limited by %s) and all %d blocks of a cluster must be resident at once on the SMs of one GPC; use smaller clusters or lighter blocks"):format(
    fmt(i.cluster), i.size, i.kernel, fmt(i.block), i.k.smem, per_sm, per_sm == 1 and "" or "s",
    limit_text(name, i.k, i.dev), i.size)
end

return M
