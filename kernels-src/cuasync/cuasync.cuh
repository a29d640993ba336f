// cuasync/cuasync.cuh — every device header of cuasync.
#pragma once

#include <cuasync/mbarrier.cuh>
#include <cuasync/bulk.cuh>
