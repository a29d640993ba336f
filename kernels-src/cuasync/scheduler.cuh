// cuasync/scheduler.cuh — a tile scheduler's walk on the device: which tiles and which k-ranges
// this CTA does, in order, and for each whether it waits for a partial, publishes one, or writes
// the tile's output. Config is the struct cuasync.scheduler{...} generates
// (<cuasync/schedulers/NAME.cuh>); the walk is lua/cuasync/model/tile_scheduler.lua's, unit for
// unit (spec/core/scheduler_spec.lua runs both and compares). Pure arithmetic: no PTX, no waits
// (the turnstile's are in turnstile.cuh). Compiled by NVRTC with no host headers.
//   cuasync::scheduler::walk<Config> w(blockIdx.x, gridDim.x);
//   for (cuasync::scheduler::work t; w.next(t);) { ... k-tiles t.k_begin .. t.k_end of tile t.tile ... }
#pragma once

namespace cuasync {
namespace scheduler {

enum { persistent = 0, stream_k = 1, split_k = 2 };   // Config::kind
enum { serial = 0, reduce = 1 };                      // Config::mode (split-K)
constexpr unsigned no_slot = 0xFFFFFFFFu;             // work::slot of a tile no turnstile splits

// One unit of work: k-tiles [k_begin, k_end) of a tile.
struct work {
    unsigned tile;            // the tile's index, in raster order
    unsigned row, col;        // its tile row and column
    unsigned m0, n0;          // its first output row and column (elements)
    unsigned k_begin, k_end;  // the k-tiles of this unit (k_end - k_begin of them)
    unsigned split;           // split-K: the index of this k-range among the tile's (0 first)
    unsigned slot;            // turnstile: the tile's flag and partial (flags[slot], bm x bn f32 at
                              // slot in the workspace; Config::slots of them); no_slot: none
    bool wait;                // turnstile: wait for flag == k_begin, then add the tile's partial;
                              // reduce: rank 0, which adds its peers' partials
    bool publish;             // turnstile: write the partial, then flag = k_end; reduce: a peer
                              // whose partial rank 0 adds
    bool epilogue;            // this unit writes the tile's output
};

// The i-th of n even parts of 0..total (the first total % n parts one longer).
__device__ __forceinline__ void part(unsigned total, unsigned n, unsigned i, unsigned &b, unsigned &e)
{
    const unsigned base = total / n, extra = total % n;
    b = i * base + (i < extra ? i : extra);
    e = b + base + (i < extra ? 1u : 0u);
}

// Tile t's row and column: raster bands of Config::raster tile rows, column by column in a band
// (gemm_tma.cu's tiling with CLUSTER = 1).
template <class Config>
__device__ __forceinline__ void tile_at(unsigned t, unsigned &row, unsigned &col)
{
    const unsigned first = (t / (Config::raster * Config::tiles_n)) * Config::raster;
    const unsigned rows = Config::tiles_m - first < Config::raster ? Config::tiles_m - first : Config::raster;
    const unsigned w = t - first * Config::tiles_n;
    row = first + w % rows;
    col = w / rows;
}

template <class Config>
struct walk {
    unsigned ctas;      // CTAs in the grid (Config::ctas when launched as sched:launch_config says)
    unsigned next_;     // the next whole tile (persistent, stream-K) or split-K unit
    unsigned lo, hi;    // stream-K: the part of this CTA's k-iteration range still to do

    __device__ __forceinline__ walk(unsigned cta, unsigned ctas_) : ctas(ctas_), next_(cta), lo(0u), hi(0u)
    {
        if (Config::kind == stream_k) part(Config::sk_iters, ctas_, cta, lo, hi);
    }

    __device__ __forceinline__ void fill(work &w, unsigned t, unsigned kb, unsigned ke, unsigned split) const
    {
        w.tile = t;
        tile_at<Config>(t, w.row, w.col);
        w.m0 = w.row * Config::bm;
        w.n0 = w.col * Config::bn;
        w.k_begin = kb;
        w.k_end = ke;
        w.split = split;
        // stream-K: only the last sk_tiles are split, slot = tile - dp_tiles; serial split-K: the tile
        w.slot = Config::kind == stream_k ? (t >= Config::dp_tiles ? t - Config::dp_tiles : no_slot)
               : Config::kind == split_k && Config::mode == serial ? t : no_slot;
        w.wait = kb > 0u;
        w.publish = ke < Config::k_tiles;
        w.epilogue = ke == Config::k_tiles;
    }

    // The next unit of this CTA into w; false when it has none left.
    __device__ __forceinline__ bool next(work &w)
    {
        if (Config::kind == split_k) {
            if (next_ >= Config::tiles * Config::splits) return false;
            const unsigned t = next_ / Config::splits, s = next_ % Config::splits;
            unsigned kb, ke;
            part(Config::k_tiles, Config::splits, s, kb, ke);
            fill(w, t, kb, ke, s);
            if (Config::mode == reduce) {   // rank 0 of the cluster gathers; the others hand over
                w.wait = s == 0u;
                w.publish = s != 0u;
                w.epilogue = s == 0u;
            }
            next_ += ctas;
            return true;
        }
        const unsigned whole = Config::kind == stream_k ? Config::dp_tiles : Config::tiles;
        if (next_ < whole) {
            fill(w, next_, 0u, Config::k_tiles, 0u);
            next_ += ctas;
            return true;
        }
        if (Config::kind != stream_k || hi <= lo) return false;
        // stream-K: this CTA's range backwards, the last tile it touches first
        const unsigned t = (hi - 1u) / Config::k_tiles;
        const unsigned start = t * Config::k_tiles > lo ? t * Config::k_tiles : lo;
        fill(w, Config::dp_tiles + t, start - t * Config::k_tiles, hi - t * Config::k_tiles, 0u);
        hi = start;
        return true;
    }
};

} // namespace scheduler
} // namespace cuasync
