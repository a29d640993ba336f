---@meta
-- LuaCATS annotations: programs, modules, kernels, launch configs, tensor maps, graphs.

---@class cuasync.Resources
---@field registers integer
---@field static_smem integer
---@field stack integer
---@field spill_stores integer
---@field spill_loads integer
---@field barriers integer

---@class cuasync.Program
local Program = {}
---@return cuasync.Module
function Program:compile() end
---@param arch? string
---@return table entry the cache entry
function Program:build(arch) end
---@return string
function Program:arch() end
---@return string
function Program:ptx() end
---@return string
function Program:cubin() end
---@return string
function Program:log() end
---@return table<string, cuasync.Resources> by_kernel, string? why
function Program:resources() end

---@class cuasync.Module
local Module = {}
---@param name string
---@param signature string "ptr, u64, f32"
---@return cuasync.Kernel
function Module:kernel(name, signature) end
---@param name string
---@return cuasync.Buffer
function Module:global(name) end
---@param expr string
---@return string
function Module:lowered(expr) end
function Module:load() end
---@return string
function Module:ptx() end
---@return string
function Module:cubin() end
---@return string
function Module:log() end
---@return table<string, cuasync.Resources>
function Module:resources() end
function Module:close() end

---@class cuasync.Config
---@field grid integer|integer[]
---@field block integer|integer[]
---@field smem integer dynamic shared memory bytes
---@field stream cuasync.Stream?
---@field cluster integer[]? { x, y, z }
---@field non_portable boolean?
---@field cluster_policy ("spread"|"default")?
---@field cooperative boolean?
---@field programmatic boolean?
local Config = {}
function Config:preflight() end
---@return integer
function Config:max_active_clusters() end
---@return integer
function Config:max_cluster_size() end

---@class cuasync.Kernel
local Kernel = {}
---@param cfg cuasync.Config|table
function Kernel:launch(cfg, ...) end
---@param cfg cuasync.Config|table
---@return fun() run a launch with no checks
function Kernel:prepare(cfg, ...) end
---@param block_threads integer
---@param smem? integer
---@return integer
function Kernel:occupancy(block_threads, smem) end
---@param cfg cuasync.Config|table
---@return integer
function Kernel:max_active_clusters(cfg) end
---@param cfg cuasync.Config|table
---@return integer
function Kernel:max_cluster_size(cfg) end
---@return table
function Kernel:attributes() end
function Kernel:read_attributes() end
function Kernel:check_signature() end
---@return cuasync.Trace the timeline of the module's last traced launch (after a synchronize)
function Kernel:trace() end

-- A kernel's timeline (trace/init.lua, model/timeline.lua's build): docs/timeline.md.
---@class cuasync.Trace
---@field kernel string
---@field duration number ns
---@field lost integer events lost to full rings
---@field spans table[]
---@field instants table[]
---@field flows table[]
local Trace = {}
---@return table the stall table
function Trace:summary() end
---@return string
function Trace:text() end
---@param path string
---@return string path
function Trace:perfetto(path) end
---@param path string
---@param opts? { width: integer? }
---@return string path
function Trace:svg(path, opts) end

---@class cuasync.TensorMap
---@field dtype string
---@field dims integer[]
---@field strides integer[]
---@field box integer[]
---@field box_bytes integer
---@field smem_bytes integer
---@field swizzle string
---@field rank integer
---@field mode "tile"|"im2col"
local TensorMap = {}
---@param buffer cuasync.Buffer|ffi.cdata*
---@param bytes? integer
function TensorMap:replace_address(buffer, bytes) end
---@return string
function TensorMap:describe() end

---@class cuasync.Graph
---@field nodes { count: integer, kernel: integer, memcpy: integer, memset: integer, conditional: integer, [integer|string]: cuasync.GraphNode }
---@field edges { count: integer, programmatic: integer }
local Graph = {}
---@param key integer|string
---@return cuasync.GraphNode
function Graph:node(key) end
---@param stream? cuasync.Stream
function Graph:launch(stream) end
---@param stream? cuasync.Stream
function Graph:upload(stream) end
---@param fn fun(s: cuasync.Stream, g: cuasync.GraphBuilder)
---@return cuasync.Graph, string how
function Graph:update(fn) end
---@param path string
function Graph:dot(path) end
function Graph:close() end

---@class cuasync.GraphNode
local GraphNode = {}
---@return cuasync.GraphNode
function GraphNode:set(...) end
---@param on boolean
---@return cuasync.GraphNode
function GraphNode:enable(on) end

---@class cuasync.GraphCondition

---@class cuasync.GraphBuilder
local GraphBuilder = {}
---@param label string
---@return cuasync.GraphBuilder
function GraphBuilder:name(label) end
---@param opts? { default?: integer, name?: string }
---@return cuasync.GraphCondition
function GraphBuilder:condition(opts) end
---@param c cuasync.GraphCondition
---@param fn fun(s: cuasync.Stream, g: cuasync.GraphBuilder, round: integer) round: 1..unroll
---@param opts? { unroll?: integer } unroll: copies of fn's work in one round, 1..64 (default 1); a copy run after c went to 0 must do nothing
---@return cuasync.GraphBuilder
function GraphBuilder:while_(c, fn, opts) end
---@param c cuasync.GraphCondition
---@param fn fun(s: cuasync.Stream, g: cuasync.GraphBuilder)
---@param else_fn? fun(s: cuasync.Stream, g: cuasync.GraphBuilder) a function (an opts table here is refused: if_ takes none)
---@return cuasync.GraphBuilder
function GraphBuilder:if_(c, fn, else_fn) end
