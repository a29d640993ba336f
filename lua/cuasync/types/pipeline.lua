---@meta
-- LuaCATS annotations: pipeline plans, the watchdog's hang error, sweeps.

---@class cuasync.Pipeline
---@field name string
---@field stages integer
---@field kind "tma"|"cp_async"
---@field tx_bytes integer bytes a stage's full barrier must see complete (TMA and bulk plans)
---@field stage_bytes integer bytes a stage's cp.async copies bring (cp.async plans)
---@field smem_bytes integer dynamic shared memory, alignment slack included
---@field block integer threads per block
---@field pitch integer
---@field align integer
---@field full_count integer
---@field empty_count integer
---@field cluster_size integer
---@field wait_depth integer? cp.async groups in flight (completion = "group")
---@field loads table[]
---@field roles table
local Pipeline = {}
---@return string
function Pipeline:explain() end
---@return table[]
function Pipeline:layout() end
---@return string
function Pipeline:header() end
---@return table<string, integer>
function Pipeline:defines() end
---@param target? cuasync.Device|"sm_90"|"sm_90a"|cuasync.Limits
---@return cuasync.Pipeline
function Pipeline:check(target) end
---@param spec table the fields of cuasync.program
---@return cuasync.Program
function Pipeline:program(spec) end
---@param opts { grid: integer|integer[], stream: cuasync.Stream? }
---@return cuasync.Config
function Pipeline:launch_config(opts) end
---@param opts? { iterations: integer?, runs: integer?, seed: integer?, explore: ("random"|"exhaustive")?, bound: integer? }
---@return { ok: boolean, kind: string?, report: fun(self): string }
function Pipeline:simulate(opts) end
---@param fault table tx_delta | consumer_arrivals | parity_flip | producer_exits_at | skip_commit | wait_depth_delta | early_read
---@return cuasync.Pipeline
function Pipeline:mutate(fault) end

-- An error object of kind "hang" (cuasync.Error's fields; errors.lua): tostring(err) is its message.
---@class cuasync.Hang
---@field kind "hang"
---@field message string
---@field kernel string
---@field block integer[]
---@field warp integer
---@field role string
---@field barrier string
---@field stage integer
---@field parity integer
---@field iteration integer
---@field phase integer? the barrier's phase the wait was for
---@field at string? the barrier placed: "full[2] of pipeline 'main' (stage 2, phase 9, parity 1, iteration 37)"
---@field waited_ms number
---@field context_ok boolean
---@field last_events string[]? a traced kernel's: each warp of the hung block, its last events
local Hang = {}
---@return string
function Hang:explain() end

---@class cuasync.SweepRow
---@field kind "measured"|"pruned"|"failed"|"skipped"|"cancelled"
---@field params table
---@field ms number?
---@field gbps number?
---@field tflops number?
---@field ratio number?
---@field verified boolean?
---@field reason string?
---@field failed_in "where"|"program"|"compile"|"build"|"run"|"hang"|"verification"|"timing"|"remeasure"|"worker"|nil
---@field registers integer?
---@field spills integer?
---@field from { store: string, device: string, at: integer, rows: integer, key: string }? cuasync.sweep.best's row: the run it came from

---@class cuasync.SweepResult
---@field rows cuasync.SweepRow[]
---@field best cuasync.SweepRow?
---@field complete boolean?
---@field stopped string?
---@field notes string[]?
---@field baseline { name: string, ms: number, gbps: number?, tflops: number? }?
---@field strategy string?
---@field seed integer?
---@field evaluated integer?
---@field shard string?
---@field gpus integer[]?
---@field device_name string?
---@field store { damaged: integer?, old: boolean?, path: string?, problem: string? }?
---@field skipped_launches string?
---@field compile_s number?
---@field compile_workers integer?
---@field at integer?
---@field wall_s number?

---@class cuasync.Sweep
---@field name string
---@field rows cuasync.SweepRow[]
---@field best cuasync.SweepRow?
---@field complete boolean
---@field notes string[]?
---@field result cuasync.SweepResult? the last run's record
local Sweep = {}
---@param opts? { jobs: integer?, gpus: ("all"|integer[])?, force: boolean?, shard: string?, quiet: boolean?, strategy: string?, budget: table?, seed: integer?, replay: boolean?, slurm: table?, trace: ("best"|"all")? }
---@return cuasync.Sweep
function Sweep:run(opts) end
function Sweep:print() end
---@return string
function Sweep:text() end
---@param format "csv"|"json"|"t4"|"plot"|"text"
---@param path string
function Sweep:write(format, path, opts) end
---@return string path
function Sweep:csv(path) end
---@return string path
function Sweep:json(path) end
---A chart: a .svg drawn in Lua; a .png by gnuplot, or drawn as .svg beside it where gnuplot is not installed (note says so).
---@param path string ends in .svg or .png
---@param opts? { x: string?, y: ("GB/s"|"TFLOP/s"|"ratio"|"ms")?, series: string?, title: string?, log: ("x"|"y"|"xy")? }
---@return string path, string? note
function Sweep:plot(path, opts) end
---@param opts { x: string, series: string|string[]|nil, memory: table?, gain: number? }
---@return { text: fun(self): string }
function Sweep:knee(opts) end
---@return table[]
function Sweep:points() end
---@param name string
---@param values any[]
function Sweep:set_param(name, values) end
---@return string
function Sweep:label(p) end
