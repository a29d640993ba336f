---@meta
-- LuaCATS annotations for lua-language-server (never required at run time): the module, devices,
-- memory, streams, programs, kernels and launch configs. docs/reference.md says what each does;
-- spec/house/docs_spec.lua checks that every method of these classes is annotated here or beside.

---@class cuasync
---@field version string
---@field library string the native library's path
---@field limits { sm_90: cuasync.Limits }
---@field cache { dir: fun(): string, stats: { hits: integer, misses: integer, nvrtc: integer, written: integer }, clear_memory: fun() }
---@field errors cuasync.errors
local cuasync = {}
---@return boolean ok, string? why
function cuasync.available() end
---@param ordinal? integer
---@return cuasync.Device
function cuasync.device(ordinal) end
---@return cuasync.Device
function cuasync.current_device() end
---@class cuasync.ConditionsSample a GPU's conditions through NVML; a field NVML could not read is absent and named in missing
---@field sm_mhz number?
---@field mem_mhz number?
---@field power_w number?
---@field temp_c number?
---@field reasons string[]? sorted: "sw_power_cap", "hw_slowdown", ... (an unknown bit as "0x200")
---@field power_limit_w number?
---@field max_sm_mhz number?
---@field max_mem_mhz number?
---@field missing table<string, string>? { power = "nvmlDeviceGetPowerUsage: Not Supported (3)" }
---@class cuasync.conditions NVML (libnvidia-ml.so.1 or $CUASYNC_NVML_LIB); calling it is sample(dev)
---@overload fun(dev: cuasync.Device?): cuasync.ConditionsSample?, string?
---@field sample fun(dev: cuasync.Device?): cuasync.ConditionsSample?, string?
---@field sample_index fun(i: integer): cuasync.ConditionsSample?, string?
---@field available fun(): boolean, string?
---@field summarize fun(samples: cuasync.ConditionsSample[]): table n, sm_mhz (median), sm_mhz_min, sm_mhz_max, mem_mhz, power_w (mean), temp_c (max), reasons, missing
---@field REASONS string[]
cuasync.conditions = {}
---@param opts? { timeout_ms: number }
function cuasync.synchronize(opts) end
---@param bytes integer
---@return cuasync.Buffer
function cuasync.alloc(bytes) end
---@param bytes integer
---@return cuasync.HostBuffer
function cuasync.host_alloc(bytes) end
---@alias cuasync.Dtype "u8"|"i8"|"u16"|"i16"|"u32"|"i32"|"f16"|"bf16"|"f32"|"f64"
---@alias cuasync.FillOptions { dtype: cuasync.Dtype?, seed: integer?, lo: number?, hi: number?, stream: cuasync.Stream? }
---Fresh random elements in [lo, hi) (floats default -1..1, integers the dtype's range), a pure function of (seed, index).
---@param dst cuasync.Buffer|cuasync.HostBuffer|ffi.cdata* a cdata array gives its dtype where none is named
---@param opts? cuasync.FillOptions
---@return any dst, integer seed
function cuasync.fill_random(dst, opts) end
---Every 16-bit half 0x7FFA: a positive quiet NaN as f16, bf16, f32 and f64, which LuaJIT reads back as nan.
---@param dst cuasync.Buffer|cuasync.HostBuffer|ffi.cdata*
---@param stream? cuasync.Stream
---@return any dst
function cuasync.poison(dst, stream) end
---true, or false and "first mismatch at [i] got X want Y, N of M differ, max error E"; on the GPU when both are device buffers.
---@param got cuasync.Buffer|cuasync.HostBuffer|ffi.cdata*|string
---@param want cuasync.Buffer|cuasync.HostBuffer|ffi.cdata*|string
---@param opts? { dtype: cuasync.Dtype?, rtol: number?, atol: number?, n: integer? }
---@return boolean ok, string? why
function cuasync.compare(got, want, opts) end
---@param opts? { non_blocking: boolean }
---@return cuasync.Stream
function cuasync.stream(opts) end
---@return cuasync.Event
function cuasync.event() end
---@param spec { source: string?, file: string?, name: string?, defines: table?, options: string[]?, headers: table<string,string>?, arch: string?, watchdog: (boolean|{ timeout_ms: number, action: "exit"|"trap" })?, trace: (boolean|{ blocks: ("all"|integer|integer[])?, events: integer?, names: table<integer,string>? })? }
---@return cuasync.Program
function cuasync.program(spec) end
---@param spec table the fields of docs/reference.md "Pipeline plans"
---@return cuasync.Pipeline
function cuasync.pipeline(spec) end
---@param spec table the fields of docs/sweeps.md
---@return cuasync.Sweep
function cuasync.sweep(spec) end
---@param spec table dtype, dims, strides, box, swizzle, ... (docs/reference.md "Tensor maps")
---@return cuasync.TensorMap
function cuasync.tensormap(spec) end
-- cuasync.graph(fn[, opts]) -> cuasync.Graph; its fields act on the capture open now (its builder's)
---@class cuasync.graph_maker
---@overload fun(fn: fun(s: cuasync.Stream, g: cuasync.GraphBuilder), opts?: { stream?: cuasync.Stream, name?: string }): cuasync.Graph
cuasync.graph = {}
---@param opts? { default?: integer, name?: string }
---@return cuasync.GraphCondition
function cuasync.graph.condition(opts) end
---@param c cuasync.GraphCondition
---@param fn fun(s: cuasync.Stream, g: cuasync.GraphBuilder, round: integer) round: 1..unroll
---@param opts? { unroll?: integer } unroll: copies of fn's work in one round, 1..64 (default 1)
function cuasync.graph.while_(c, fn, opts) end
---@param c cuasync.GraphCondition
---@param fn fun(s: cuasync.Stream, g: cuasync.GraphBuilder)
---@param else_fn? fun(s: cuasync.Stream, g: cuasync.GraphBuilder)
function cuasync.graph.if_(c, fn, else_fn) end
---@param fn fun()
---@param opts? { warmup: integer?, reps: integer?, stream: cuasync.Stream?, before: fun()?, host: boolean? }
---@return { median: number, min: number, max: number, mean: number, times: number[] }
function cuasync.bench(fn, opts) end
---@class cuasync.isolate the one place cuasync starts a process (tools/isolate.lua)
---@field run fun(code: string, opts: { env: table<string,string>?, timeout_s: integer?, root: string? }?): boolean, string, integer?
---@field spawn fun(jobs: { argv: string[], env: table<string,string>?, log: string? }[], on_line: fun(line: string)?): integer[]
---@field command fun(cmd: string|string[], opts: { env: table<string,string>?, timeout_s: integer? }?): boolean, string, integer?
---@field pipe_writer fun(cmd: string|string[], opts: { env: table<string,string>? }?): file*?, string?
---@field which fun(name: string): string?
---@field cores fun(): integer
---@field sleep fun(seconds: number)
---@field shell_quote fun(s: string): string
cuasync.isolate = {}
---@return boolean
function cuasync.is_hang(e) end
---@return boolean
function cuasync.is_driver_error(e) end
---@return boolean
function cuasync.is_cancelled(e) end

---@alias cuasync.ErrorKind "compile"|"plan"|"driver"|"hang"|"cancelled"

-- The error kinds (lua/cuasync/errors.lua): every error object cuasync raises.
---@class cuasync.errors
---@field KINDS cuasync.ErrorKind[]
---@field CALLS table<string, cuasync.ErrorKind> the calls whose refusals have a kind ({ pipeline = "plan" })
---@field DriverError table the prototype of each kind (its kind and methods)
---@field Hang table
---@field Cancelled table
---@field CompileError table
---@field PlanError table
cuasync.errors = {}
---@param e any
---@return cuasync.ErrorKind|nil kind nil for a string or a table cuasync did not make
function cuasync.errors.kind(e) end
---@param e any
---@return string message the text without its `file.lua:N: ` position
function cuasync.errors.message(e) end
---@param where string a call's name ("pipeline.simulate")
---@return cuasync.ErrorKind|nil
function cuasync.errors.of_call(where) end
---@param kind cuasync.ErrorKind
---@param fields table with message
---@return cuasync.Error
function cuasync.errors.new(kind, fields) end
---@return boolean
function cuasync.errors.is_driver_error(e) end
---@return boolean
function cuasync.errors.is_hang(e) end
---@return boolean
function cuasync.errors.is_cancelled(e) end

-- An error object: tostring(err) is its text (position included where it names your line),
-- and string methods work on that text.
---@class cuasync.Error
---@field kind cuasync.ErrorKind
---@field message string the text without a position
---@field position string? the `file.lua:12: ` tostring puts first (compile and plan errors)

---@class cuasync.CompileError: cuasync.Error
---@field kind "compile"
---@field name string the program's name
---@field arch string
---@field log string NVRTC's log
---@field source string the program's source
---@field options string[] NVRTC's command line
---@field lines string[] the whole source, one numbered line each (">" where the log names it)
---@field failing integer[] the line numbers the log names

---@class cuasync.PlanError: cuasync.Error
---@field kind "plan"

---@class cuasync.DriverError: cuasync.Error
---@field kind "driver"
---@field code string the CUDA_ERROR_* name
---@field status integer
---@field sticky boolean whether the context is lost
---@field where string? the user's line

---@class cuasync.Cancelled: cuasync.Error
---@field kind "cancelled"
---@field cause "timeout"|"interrupt"
---@field elapsed_ms number
---@field kernels string[]

---@class cuasync.Limits
---@field name string
---@field cc integer
---@field max_threads_per_block integer
---@field max_block integer[]
---@field max_grid integer[]
---@field smem_per_block integer
---@field smem_optin integer
---@field reserved_smem_per_block integer
---@field cluster boolean
---@field max_threads_per_sm integer
---@field max_warps_per_sm integer
---@field max_blocks_per_sm integer
---@field regs_per_sm integer
---@field smem_per_sm integer
---@field regs_per_thread integer

---@class cuasync.Device
---@field ordinal integer
---@field name string
---@field arch string "sm_90a"
---@field cc integer
---@field sms integer
---@field total_mem integer
---@field smem_optin integer
---@field l2_bytes integer
---@field cluster boolean whether the device launches clusters
local Device = {}
---@return cuasync.Limits
function Device:limits() end
---@return integer free, integer total
function Device:mem_info() end
---@param opts? { timeout_ms: number }
function Device:synchronize(opts) end

---@class cuasync.Buffer
---@field ptr ffi.cdata* the device address
---@field nbytes integer
local Buffer = {}
---@param src string|cuasync.HostBuffer|ffi.cdata*
---@param bytes? integer
---@param offset? integer
---@param stream? cuasync.Stream
function Buffer:upload(src, bytes, offset, stream) end
---@param ctype? string
---@param n? integer
---@return ffi.cdata*
function Buffer:download(ctype, n) end
---@param dst cuasync.HostBuffer|ffi.cdata*
---@param bytes? integer
---@param offset? integer
---@param stream? cuasync.Stream
function Buffer:download_to(dst, bytes, offset, stream) end
---@param byte integer
---@param bytes? integer
---@param offset? integer
---@param stream? cuasync.Stream
function Buffer:fill(byte, bytes, offset, stream) end
---@param opts? cuasync.FillOptions
---@return cuasync.Buffer self, integer seed
function Buffer:fill_random(opts) end
---@param stream? cuasync.Stream
---@return cuasync.Buffer self
function Buffer:poison(stream) end
---@return integer
function Buffer:size() end
function Buffer:close() end

---@class cuasync.HostBuffer
---@field ptr ffi.cdata*
---@field nbytes integer
local HostBuffer = {}
---@param elem string the element type: "float" gives a float *
---@return ffi.cdata*
function HostBuffer:as(elem) end
---@param opts? { dtype: cuasync.Dtype?, seed: integer?, lo: number?, hi: number? }
---@return cuasync.HostBuffer self, integer seed
function HostBuffer:fill_random(opts) end
---@return cuasync.HostBuffer self
function HostBuffer:poison() end
---@return integer
function HostBuffer:size() end
function HostBuffer:close() end

---@class cuasync.Stream
local Stream = {}
---@param opts? { timeout_ms: number }
function Stream:synchronize(opts) end
function Stream:close() end

---@class cuasync.Event
local Event = {}
---@param stream? cuasync.Stream
function Event:record(stream) end
---@return boolean
function Event:query() end
---@param opts? { timeout_ms: number }
function Event:synchronize(opts) end
---@param later cuasync.Event
---@return number ms
function Event:elapsed(later) end
function Event:close() end
