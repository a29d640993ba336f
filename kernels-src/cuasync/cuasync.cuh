// cuasync/cuasync.cuh — every device header of cuasync.
#pragma once

#include <cuasync/arch.cuh>
#include <cuasync/watchdog.cuh>
#include <cuasync/mbarrier.cuh>
#include <cuasync/cp_async.cuh>
#include <cuasync/bulk.cuh>
#include <cuasync/tma.cuh>
#include <cuasync/ring.cuh>
#include <cuasync/pipeline.cuh>
#include <cuasync/pipeline_cp_async.cuh>   // also through pipeline.cuh
#include <cuasync/order.cuh>               // also through pipeline.cuh
#include <cuasync/cluster.cuh>
#include <cuasync/scheduler.cuh>
#include <cuasync/turnstile.cuh>
#include <cuasync/warpgroup.cuh>
#include <cuasync/fastmath.cuh>
#include <cuasync/pdl.cuh>
#include <cuasync/graph.cuh>
