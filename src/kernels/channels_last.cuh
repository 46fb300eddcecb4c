// channels_last tensors (NHWC / NDHWC), where a slice's elements are C apart. A template over the
// op (kernels/forward_op.cuh, kernels/backward_op.cuh), in three kernels over tiles of
// [tile_rows spatial positions x channel_block channels]:
//   reduce  each tile is staged in shared memory, then every channel's column is reduced from
//           there with the op's reduce (the threads of a column sum through shared memory in a
//           fixed order), one float64 partial per (channel of a sample, tile); or, where the plan
//           streams it (Plan::stream_parts: the plain ops), parts of each sample's rows
//           move through a ring of bulk copies into sums in registers, one partial per (channel
//           of a sample, part) (channels_last_stream_kernel), which may then run the elementwise
//           pass itself, its CTAs a part each all at once (Plan::stream_applies: no finish or
//           apply kernel);
//   finish  a warp or a CTA per slice combines the partials of its channels' tiles (one channel, or
//           a GroupNorm group's C / groups; the op's combine_split, as the split path does) and
//           keeps each of its channels' elementwise coefficients in the workspace;
//   apply   each tile again, from the last: every output element from its inputs and its
//           channel's coefficients.
// How a tile moves (TileLoad): where it holds every channel (C <= kChannelsLastThreads) it is one
// contiguous run of each tensor, staged by a bulk copy in both passes (kBulk), as shared_resident
// stages its chunks; wider C is split in channel blocks whose rows are runs C apart, moved by the
// threads in 16-byte runs of channels where every row is aligned (kVector), else element by
// element (kScalar), the elementwise pass straight from global memory. The inputs are read twice
// from HBM, as on the split path; the second and third kernels are programmatic dependents of the
// one before (launch_dependent).
// The resident form (plan.exchange == Exchange::kGlobal; planner.cpp says where it runs) is one
// kernel over tiles of whole rows that a group of CTAs holds for a sample from its reduction to its
// elementwise pass: the inputs are read once (channels_last_resident_kernel). The cluster form
// (plan.exchange == Exchange::kCluster) holds a sample's x in a cluster of CTAs, the clusters taking
// the samples in turn: x is read once, the backward's dy twice (channels_last_cluster_kernel).
// The kernels, compiled one element type a file (kernels/instances/); the launch and its checks:
// kernels/channels_last.cu.
#pragma once

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/ptx>

#include "config.h"
#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

// Where a thread works in the reduction of a tile: rows `row`, `row + rows`, ... of channel
// `column` of the block.
struct TileThread {
  int channel_block;
  int rows;  // rows a pass: blockDim.x / channel_block
  int row;
  int column;
  __device__ explicit TileThread(const KernelArgs& args)
      : TileThread(args, args.channels_last_divisors.by_channel_block.divmod(static_cast<int>(threadIdx.x))) {}

 private:
  __device__ TileThread(const KernelArgs& args, FastDivisor::Split split)
      : channel_block(args.channel_block),
        rows(static_cast<int>(args.channels_last_divisors.by_rows_a_pass.divisor)),
        row(split.quotient),
        column(split.remainder) {}
};

// One item of the kernels' grid-stride loop: a tile, rows [begin, begin + rows) of channels
// [first_channel, first_channel + width) of one sample.
struct Tile {
  int64_t sample;
  int64_t first_channel;
  int width;
  int64_t index;  // of the tile in its slices
  int64_t begin;
  int64_t rows;
  int64_t offset;  // of its first element in every tensor
};
// A channel's S spatial positions are args.channel_len (a GroupNorm slice spans several channels).
__device__ __forceinline__ Tile tile_of(const KernelArgs& args, int64_t item) {
  const ChannelsLastDivisors& d = args.channels_last_divisors;
  const int64_t sample_block = d.by_tiles.quotient(item);  // sample * blocks + block
  Tile tile;
  tile.index = item - sample_block * args.parts_per_slice;
  tile.sample = d.by_blocks.quotient(sample_block);
  tile.first_channel = (sample_block - tile.sample * d.by_blocks.divisor) * args.channel_block;
  tile.width = static_cast<int>(min(static_cast<int64_t>(args.channel_block), args.channels - tile.first_channel));
  tile.begin = tile.index * args.tile_rows;
  tile.rows = min(args.tile_rows, args.channel_len - tile.begin);
  tile.offset = (tile.sample * args.channel_len + tile.begin) * args.channels + tile.first_channel;
  return tile;
}

// Items of the grid-stride loop: samples x channel blocks x tiles.
__device__ __forceinline__ int64_t channels_last_items(const KernelArgs& args) {
  return args.channels_last_divisors.samples * args.channels_last_divisors.by_blocks.divisor * args.parts_per_slice;
}

// How a tile moves between global and shared memory (the file's head says when each is used).
enum class TileLoad { kBulk, kVector, kScalar };

// What a thread moves at once on the channel-block paths: a 16-byte run of channels, or one element.
template <typename T, TileLoad kLoad>
using UnitOf = std::conditional_t<kLoad == TileLoad::kVector, Pack<T>, T>;
template <typename T, TileLoad kLoad>
inline constexpr int kUnitElems = kLoad == TileLoad::kVector ? kVecOf<T> : 1;
// Units of every input a thread loads before it stores any, `kBytes` in all: enough in flight.
template <typename T, TileLoad kLoad, int kInputs, int kBytes>
inline constexpr int kUnitBatch =
    std::min(16, std::max(1, kBytes / static_cast<int>(sizeof(UnitOf<T, kLoad>) * kInputs)));
// The staging through registers (the forward's, and every scalar path's) loads 128 bytes a thread
// at three CTAs an SM; the elementwise pass straight from global memory, whose threads also hold a
// coefficient set per channel of their run, 64 at two (its register bound).
inline constexpr int kStageBatchBytes = 128;
inline constexpr int kApplyBatchBytes = 64;
inline constexpr int kApplyCtasPerSm = 2;

// A unit's load and store; `evict_first`: marked evict-first in L2 (Plan::evict_first).
template <typename T, TileLoad kLoad>
__device__ __forceinline__ UnitOf<T, kLoad> load_unit(const T* p, bool evict_first = false) {
  if constexpr (kLoad == TileLoad::kVector) {
    return evict_first ? load_pack_evict_first(p) : load_pack(p);
  } else {
    return evict_first ? __ldcs(p) : *p;
  }
}
template <typename T, TileLoad kLoad>
__device__ __forceinline__ void store_unit(T* p, const UnitOf<T, kLoad>& unit, bool evict_first = false) {
  if constexpr (kLoad == TileLoad::kVector) {
    store_output_pack(p, unit, evict_first);
  } else if (evict_first) {
    __stcs(p, unit);
  } else {
    *p = unit;
  }
}
template <typename T>
__device__ __forceinline__ T& element_of(Pack<T>& unit, int e) {
  return unit.v[e];
}
template <typename T>
__device__ __forceinline__ T& element_of(T& unit, int) {
  return unit;
}
template <typename T>
__device__ __forceinline__ const T& element_of(const Pack<T>& unit, int e) {
  return unit.v[e];
}
template <typename T>
__device__ __forceinline__ const T& element_of(const T& unit, int) {
  return unit;
}

// The output unit of the inputs' units `v`, element e with its channel's coefficients c[e].
template <typename Op, TileLoad kLoad, typename Act, typename T = typename Op::Elem>
__device__ __forceinline__ UnitOf<T, kLoad> apply_unit(const UnitOf<T, kLoad> (&v)[Op::kInputs],
                                                       const typename Op::Coefficients (&c)[kUnitElems<T, kLoad>],
                                                       const Act& activation) {
  UnitOf<T, kLoad> result;
#pragma unroll
  for (int e = 0; e < kUnitElems<T, kLoad>; ++e) {
    typename Op::Acc element[Op::kInputs];
#pragma unroll
    for (int i = 0; i < Op::kInputs; ++i) element[i] = Traits<T>::to_acc(element_of(v[i], e));
    element_of(result, e) = Traits<T>::from_acc(Op::apply(c[e], activation, element));
  }
  return result;
}

// A tile staged in shared memory: element (r, c) of input i at staged[i][r * channel_block + c]
// (channel_block = C on the bulk path, where each buffer mirrors its source's alignment modulo 16
// and `range` is the layout of its run: Chunk's, chunk.cuh).
template <typename T, int kInputs>
struct StagedTile {
  const T* staged[kInputs];
  RaggedRange<T> range;
};

// Stages the tile of every input (inputs[i]: the tensor's first element): on the bulk path one
// bulk copy of each run (start_staged_loads; its lines evict-first in L2 where `evict_first`),
// waited for; else the CTA's threads taking consecutive units of the rows, then a barrier. Every
// thread of the CTA calls it; the buffer is free (every thread is past its last read of it).
template <TileLoad kLoad, int kInputs, typename T>
__device__ __forceinline__ StagedTile<T, kInputs> stage_tile(const T* const* inputs, const Tile& tile,
                                                             unsigned char* smem, Barrier& loaded,
                                                             const KernelArgs& args, bool evict_first = false) {
  const T* from[kInputs];
#pragma unroll
  for (int i = 0; i < kInputs; ++i) from[i] = inputs[i] + tile.offset;
  StagedTile<T, kInputs> result;
  if constexpr (kLoad == TileLoad::kBulk) {
    const int64_t region = shared_region_bytes(args.tile_rows * args.channels * static_cast<int64_t>(sizeof(T)));
    T* bufs[kInputs];
    RaggedRange<T> ranges[kInputs];
    Barrier::arrival_token token =
        start_staged_loads<T, kInputs>(loaded, smem, region, from, tile.rows * args.channels, bufs, ranges, evict_first);
#pragma unroll
    for (int i = 0; i < kInputs; ++i) result.staged[i] = bufs[i];
    result.range = ranges[0];
    loaded.wait(std::move(token));
  } else {
    T* to[kInputs];
#pragma unroll
    for (int i = 0; i < kInputs; ++i) {
      to[i] = reinterpret_cast<T*>(smem) + i * args.tile_rows * args.channel_block;
      result.staged[i] = to[i];
    }
    // A thread takes one unit of the row, the same in every row it takes (rows_a_pass apart; the
    // threads past whole rows idle): a division a unit cost the staging 7 of the SD UNet forward's
    // 41 instructions an element (cuobjdump, dev/VARIANTS.md 102). A sample's last block may be
    // narrower than the others.
    const ChannelsLastDivisors& d = args.channels_last_divisors;
    const int which = tile.width == args.channel_block ? 0 : 1;
    const int rows_a_pass = static_cast<int>(d.by_unit_rows_a_pass[which].divisor);
    const auto [first_row, unit] = d.by_units_a_row[which].divmod(static_cast<int>(threadIdx.x));
    const int rows = static_cast<int>(tile.rows);
    if (first_row < rows_a_pass) {
#pragma unroll
      for (int i = 0; i < kInputs; ++i) {
        from[i] += static_cast<int64_t>(first_row) * args.channels + unit * kUnitElems<T, kLoad>;
        to[i] += first_row * args.channel_block + unit * kUnitElems<T, kLoad>;
      }
      const int64_t from_step = static_cast<int64_t>(rows_a_pass) * args.channels;
      const int to_step = rows_a_pass * args.channel_block;
      if constexpr (kLoad == TileLoad::kVector && kInputs == 2) {
        // The backward's two inputs go global to shared without registers (cp.async), every unit of
        // the thread in flight at once: 1-7% faster than batches through registers on 23 of session
        // 81's 27 channels_last shapes (H100), 2-4% slower on two. The forward's one input measured
        // 1-4% slower this way on half of them (dev/VARIANTS.md 112).
        cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
        pipe.producer_acquire();
        for (int row = first_row; row < rows; row += rows_a_pass) {
#pragma unroll
          for (int i = 0; i < kInputs; ++i) {
            cuda::memcpy_async(to[i], from[i], cuda::aligned_size_t<16>(16), pipe);
            to[i] += to_step;
            from[i] += from_step;
          }
        }
        pipe.producer_commit();
        pipe.consumer_wait();
      } else {
        using Unit = UnitOf<T, kLoad>;
        constexpr int kBatch = kUnitBatch<T, kLoad, kInputs, kStageBatchBytes>;
        for (int k = 0; first_row + k * rows_a_pass < rows; k += kBatch) {
          Unit v[kBatch][kInputs];
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            if (first_row + (k + b) * rows_a_pass >= rows) break;
#pragma unroll
            for (int i = 0; i < kInputs; ++i) v[b][i] = load_unit<T, kLoad>(from[i] + (k + b) * from_step);
          }
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            if (first_row + (k + b) * rows_a_pass >= rows) break;
#pragma unroll
            for (int i = 0; i < kInputs; ++i) *reinterpret_cast<Unit*>(to[i] + (k + b) * to_step) = v[b][i];
          }
        }
      }
    }
    __syncthreads();
  }
  return result;
}

// The bulk path's barrier, initialized by thread 0 for every thread of the CTA; the caller
// synchronizes before its first use.
__device__ __forceinline__ void init_tile_barrier(Barrier& loaded) {
  if (threadIdx.x == 0) {
    init(&loaded, blockDim.x);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
}

template <typename T, int kInputs>
struct TileColumn {
  const T* inputs[kInputs];  // the thread's first element in each staged tile
  int step;                  // rows a pass * channel_block
  int row;                   // the thread's first row
  FastDivisor by_rows;       // rows a pass
  int count;                 // the thread's rows: row, row + rows, ...
  template <typename F>
  __device__ __forceinline__ void for_each(F&& f) const {
    for (int k = 0; k < count; ++k) visit(k, f);
  }
  // f(v) for the thread's rows in [begin, end) (GroupNorm's backward sums a chunk per channel; a
  // column is one channel, so it asks for every row). Its rows' bounds are taken once: a check a
  // row cost the SD UNet backward's reduction about half of its 35 instructions a row (cuobjdump,
  // dev/VARIANTS.md 102).
  template <typename F>
  __device__ __forceinline__ void for_each_range(int64_t begin, int64_t end, F&& f) const {
    const int first = begin > row ? static_cast<int>(by_rows.ceil_quotient(begin - row)) : 0;
    const int last =
        end > row ? static_cast<int>(min(static_cast<int64_t>(count), by_rows.ceil_quotient(end - row))) : 0;
    for (int k = first; k < last; ++k) visit(k, f);
  }
  template <typename F>
  __device__ __forceinline__ void visit(int k, F& f) const {
    AccOf<T> v[kInputs];
#pragma unroll
    for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(inputs[i][k * step]);
    f(v);
  }
};

}  // namespace (the specialization lives in its template's namespace)

template <typename T, int kInputs>
inline constexpr bool kGeneralOnePass<TileColumn<T, kInputs>> = true;

namespace {

// The op's all_sum over a column (one channel of the tile): a tree over the rows in a fixed order,
// so the sums are the same bits every run; every thread of the column gets its column's sum. Every
// thread of the CTA calls it (it synchronizes the CTA).
struct ColumnSum {
  unsigned char* scratch;  // a cell of up to kCellBytes a thread
  TileThread t;
  static constexpr int kCellBytes = 32;

  template <typename V>
  __device__ V operator()(V v) const {
    static_assert(sizeof(V) <= kCellBytes, "a column sum's value fits its cell");
    V* cell = reinterpret_cast<V*>(scratch);
    cell[threadIdx.x] = v;
    __syncthreads();
    for (int n = t.rows; n > 1;) {
      const int half = (n + 1) / 2;
      if (t.row < n - half) cell[threadIdx.x] = cell[threadIdx.x] + cell[threadIdx.x + half * t.channel_block];
      __syncthreads();
      n = half;
    }
    const V total = cell[t.column];
    __syncthreads();  // the cells are free for the next sum
    return total;
  }
  template <typename V>
  __device__ V last(V v) const {
    return (*this)(v);
  }
  // Whether `p` holds in any thread of the CTA (every column sums in step), returned to every thread.
  __device__ bool any(bool p) const { return __syncthreads_or(p) != 0; }
};

// A thread's column of a tile: its channel (of the batch's N * C), the channel's slice (a GroupNorm
// group's channels are consecutive) and the op's context of that slice. Taken before the tile is
// staged, so that the context's loads travel while the tile lands (dev/VARIANTS.md 81).
template <typename Op>
struct TileColumnOf {
  bool active;
  int64_t channel;
  int64_t slice;
  typename Op::Context ctx;
};
template <typename Op>
__device__ __forceinline__ TileColumnOf<Op> tile_column_of(const KernelArgs& args, const Tile& tile,
                                                          const TileThread& t) {
  TileColumnOf<Op> of;
  of.active = t.column < tile.width;
  of.channel = tile.sample * args.channels + tile.first_channel + (of.active ? t.column : 0);
  of.slice = args.channels_last_divisors.by_slice_channels.quotient(of.channel);
  of.ctx = Op::template context<true>(args, of.slice);
  return of;
}

// The reduction of a staged tile: each column's partial (the op's reduce over its rows, summed by
// ColumnSum), given by the column's first thread to keep(partial, column, channel) (channel: of
// the batch's N * C). `of`: the thread's column (tile_column_of). Every thread of the CTA calls it;
// it ends with a barrier after its last read of the tile.
template <typename Op, typename T, int kInputs, typename Keep>
__device__ __forceinline__ void reduce_tile_columns(const KernelArgs& args, const Tile& tile,
                                                    const StagedTile<T, kInputs>& staged, const TileThread& t,
                                                    const TileColumnOf<Op>& of, const ColumnSum& all_sum,
                                                    const Keep& keep) {
  const bool active = of.active;
  const int64_t channel = of.channel;
  const int64_t slice = of.slice;
  const int64_t local = channel - slice * args.slice_channels;
  TileColumn<T, kInputs> column;
#pragma unroll
  for (int i = 0; i < kInputs; ++i) column.inputs[i] = staged.staged[i] + t.row * args.channel_block + t.column;
  column.step = t.rows * args.channel_block;
  column.row = t.row;
  column.by_rows = args.channels_last_divisors.by_rows_a_pass;
  column.count = active && t.row < tile.rows ? column.by_rows.ceil_quotient(static_cast<int>(tile.rows) - t.row) : 0;
  // The column as a chunk of its slice: the slice's chunks are its channels' tiles in order
  // (plan_internal.h channel_partial_channel_len).
  const ChunkPlace place{slice, local * args.channel_len + tile.begin, local * args.parts_per_slice + tile.index,
                         active && t.row == 0};
  const typename Op::Partial part = Op::reduce(args, of.ctx, column, place, tile.rows, all_sum);
  if (active && t.row == 0) keep(Op::to_split(part), t.column, channel);
  __syncthreads();  // every thread is past its last read of the staged tile
}

// Where a column's partial is kept: partials[channel * tiles + index]. kFenced where CTAs of the same
// grid read it (the resident form's group, after its arrival counter); the three kernels' finish
// kernel sees every write of the reduction once it begins (begin_dependent_kernel), and a fence a
// channel would stand in each tile's last steps (dev/VARIANTS.md 80).
template <typename Op, bool kFenced>
struct KeepInPartials {
  typename Op::SplitPartial* partials;
  int64_t tiles;
  int64_t index;
  __device__ void operator()(const typename Op::SplitPartial& partial, int, int64_t channel) const {
    partials[channel * tiles + index] = partial;
    if constexpr (kFenced) __threadfence();
  }
};

template <typename Op, TileLoad kLoad>
__global__ void __launch_bounds__(kChannelsLastThreads) channels_last_reduce_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  constexpr int kInputs = Op::kInputs;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ alignas(16) unsigned char scratch[kChannelsLastThreads * ColumnSum::kCellBytes];
  if constexpr (kLoad == TileLoad::kBulk) init_tile_barrier(loaded);
  __syncthreads();
  const TileThread t(args);
  const ColumnSum all_sum{scratch, t};
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  const int64_t items = channels_last_items(args);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const Tile tile = tile_of(args, item);
    const KeepInPartials<Op, false> keep{static_cast<typename Op::SplitPartial*>(args.split_partials),
                                         args.parts_per_slice, tile.index};
    const TileColumnOf<Op> of = tile_column_of<Op>(args, tile, t);
    reduce_tile_columns<Op>(args, tile, stage_tile<kLoad, kInputs>(inputs, tile, smem, loaded, args), t, of,
                            all_sum, keep);
  }
}

// The partials a channel for the finish kernel: the streamed reduction's parts, or the tiles.
__device__ __forceinline__ int64_t reduce_parts_of(const KernelArgs& args) {
  return args.stream_parts > 0 ? args.stream_parts : args.parts_per_slice;
}

// Channel `local` of `slice`'s elementwise coefficients: the slice's (`c`, from Op::finish), moved
// to the channel's weight and bias where the op applies them by channel (GroupNorm's affine).
template <typename Op>
__device__ __forceinline__ typename Op::Coefficients channel_coefficients(const KernelArgs& args, int64_t slice,
                                                                          typename Op::Coefficients c, int64_t local) {
  static_assert(sizeof(c) <= kSliceCoefficientBytes, "a channel's coefficients fit their cell");
  ChannelWindow<Op> window(args, slice, c);
  window.seek(local * args.channel_len);
  return c;
}

// The resident form combines a sample's partials by groups of kCombineLanes lanes, each group a
// slice (the op's combine_split over its channels' tiles): enough loads in flight at once for every
// slice, without a CTA-wide sum per slice.
inline constexpr int kCombineLanes = 4;

// f(index, lane, owner) for indices [0, count), kCombineLanes lanes each (`lane`: this thread's place
// among them), over the CTA's first `threads` threads (whole warps: by default all of them): every
// lane of those warps calls f in every round (the lanes shuffle), those past the last index with it
// again and `owner` false.
template <typename F>
__device__ __forceinline__ void for_each_lane_group(int64_t count, F&& f,
                                                    int threads = static_cast<int>(blockDim.x) / 32 * 32) {
  if (static_cast<int>(threadIdx.x) >= threads) return;
  const int per_round = threads / kCombineLanes;
  const int group = static_cast<int>(threadIdx.x) / kCombineLanes;
  const int lane = static_cast<int>(threadIdx.x) % kCombineLanes;
  for (int64_t first = 0; first < count; first += per_round) {
    f(min(first + group, count - 1), lane, first + group < count);
  }
}

// Slices [first_slice, first_slice + slices) of a sample finished into their channels'
// coefficient cells (`cells`: the first slice's first channel's): each slice's `count` partials
// (partial(s, i): its i-th) combined by kCombineLanes lanes (the op's combine_split), over the CTA's
// first `threads` threads (of kThreads); where `writer`, a slice's first lane writes its outputs.
// Where the op applies its affine by channel inside a slice (GroupNorm), each slice's first cell is
// written first (Op::finish makes the coefficients of the context's channel, the slice's first),
// then, past `sync()` (a barrier of those threads), every other channel's cell by a thread each from
// its own weight and bias: a slice's lanes moving a window through its channels took a round trip to
// the weights a channel in turn (five a lane on SD UNet's slices of 20 channels, dev/VARIANTS.md
// 110). Every one of the threads calls it; the cells are read past the caller's next barrier.
template <typename Op, int kThreads, typename PartialOf, typename Sync>
__device__ __forceinline__ void combine_slices(const KernelArgs& args, int64_t first_slice, int64_t slices, int count,
                                               const PartialOf& partial, bool writer, unsigned char* cells,
                                               const Sync& sync,
                                               int threads = static_cast<int>(blockDim.x) / 32 * 32) {
  using Coefficients = typename Op::Coefficients;
  static_assert(sizeof(Coefficients) <= kSliceCoefficientBytes, "a channel's coefficients fit their cell");
  const auto cell = [&](int64_t s, int64_t local) {
    return reinterpret_cast<Coefficients*>(cells + (s * args.slice_channels + local) * kSliceCoefficientBytes);
  };
  const bool by_channel = Op::kChannelCoefficients && args.slice_channels > 1;  // the same in every thread
  for_each_lane_group(
      slices,
      [&](int64_t s, int lane, bool owner) {
        const int64_t slice = first_slice + s;
        GroupAllSum<kCombineLanes, kThreads> lane_sum;
        const auto stats = Op::template combine_split<kCombineInFlight>([&](int i) { return partial(s, i); }, count,
                                                                        lane, kCombineLanes, lane_sum);
        if (!owner) return;
        const Coefficients c = Op::finish(args, slice, Op::template context<true>(args, slice), Op::from_split(stats),
                                          writer && lane == 0);
        if (by_channel) {
          if (lane == 0) *cell(s, 0) = c;
          return;
        }
        for (int64_t local = lane; local < args.slice_channels; local += kCombineLanes) *cell(s, local) = c;
      },
      threads);
  if (!by_channel) return;
  sync();  // every slice's first cell is written
  if (static_cast<int>(threadIdx.x) >= threads) return;
  const int others = static_cast<int>(args.slice_channels) - 1;  // a slice's channels past its first
  for (int i = static_cast<int>(threadIdx.x); i < slices * others; i += threads) {
    const int s = args.channels_last_divisors.by_other_channels.quotient(i);
    const int local = 1 + i - s * others;
    Coefficients c = *cell(s, 0);
    move_to_channel<Op>(args, first_channel<true>(args, first_slice + s) + local, c);
    *cell(s, local) = c;
  }
}

// What a consumer thread of the streamed reduction loads at once: a run of kChannelsLastStreamRun
// channels (16 bytes of float32, 8 of the 16-bit types: eight 16-bit channels a thread, their sums
// and shifts, spilled at its two CTAs an SM).
template <typename T>
struct alignas(kChannelsLastStreamRun * sizeof(T)) StreamRun {
  T v[kChannelsLastStreamRun];
};

// The streamed reduction's sums for an op that streams (none other has them: kStreamsReduction), a
// consumer thread's run of kChannelsLastStreamRun channels: a stage's Block in float32 (add, from
// the run's elements of every input), a part's Sum in float64 (the blocks', then the CTA's), and
// each channel's partial from the part's Sum (the op's SplitPartial, as a tile's). kMayLoseDigits:
// whether a part may need its rows again (the kernel reads them from global memory).
template <typename Op>
struct StreamedSums;

// An element's terms of the forward's one pass: d and d * d, d = x - shift, in float32 (the
// streamed kernel's stage blocks, the cluster form's rows of a thread).
__device__ __forceinline__ void add_shifted_terms(PairSum<float>& sums, float x, float shift) {
  const float d = x - shift;
  sums.first += d;
  sums.second = fmaf(d, d, sums.second);
}

// The forward's plain op: ForwardOp's one pass of float64 sums of d and d * d around a shift (the
// part's first row), whose M2 may lose digits where the squares around the shift pass
// kChannelsLastStreamMaxSquares times it (float32 blocks keep fewer digits than float64 sums).
template <typename T>
struct StreamedSums<ForwardOp<T, false>> {
  using Op = ForwardOp<T, false>;
  using Block = PairSum<float>;
  using Sum = PairSum<double>;
  static constexpr bool kMayLoseDigits = true;
  float shift[kChannelsLastStreamRun];

  // A part's start: `first` its first staged row's runs of each input (a constant slice still sums
  // to exactly 0 in every part: ForwardOp::Context).
  __device__ __forceinline__ void begin(const KernelArgs&, int64_t, const StreamRun<T>* const (&first)[1]) {
#pragma unroll
    for (int e = 0; e < kChannelsLastStreamRun; ++e) shift[e] = Traits<T>::to_acc(first[0]->v[e]);
  }
  __device__ __forceinline__ void add(Block (&block)[kChannelsLastStreamRun], const StreamRun<T> (&v)[1]) const {
#pragma unroll
    for (int e = 0; e < kChannelsLastStreamRun; ++e) {
      add_shifted_terms(block[e], Traits<T>::to_acc(v[0].v[e]), shift[e]);
    }
  }
  // Channel e's one-pass statistics of `len` rows; *lost where they may have lost digits.
  __device__ __forceinline__ typename Op::Partial statistics(int64_t len, int e, const Sum& sums, bool* lost) const {
    return Op::from_shifted_sums(len, shift[e], sums, lost, kChannelsLastStreamMaxSquares);
  }
  __device__ __forceinline__ typename Op::SplitPartial partial(int64_t len, int e, const Sum& sums, bool* lost) const {
    return Op::to_split(statistics(len, e, sums, lost));
  }
};

// An element's terms of the backward's plain op's sums: dy, dy * d and d, d = x - center (the
// statistics x was normalized with), in float32 (the streamed kernel's stage blocks, the cluster
// form's rows of a thread).
__device__ __forceinline__ void add_gradient_terms(TripleSum<float>& sums, float x, float center, float dy) {
  const float d = x - center;
  sums.first += dy;
  sums.second = fmaf(dy, d, sums.second);
  sums.third += d;
}

// The backward's plain op: BackwardOp's sums of dy, dy * d and d, linear in the elements: nothing
// to take again.
template <typename T>
struct StreamedSums<BackwardOp<T, false>> {
  using Op = BackwardOp<T, false>;
  using Block = TripleSum<float>;
  using Sum = TripleSum<double>;
  static constexpr bool kMayLoseDigits = false;
  float center[kChannelsLastStreamRun];

  // `first_channel`: the run's first channel of the batch's N * C.
  __device__ __forceinline__ void begin(const KernelArgs& args, int64_t first_channel,
                                        const StreamRun<T>* const (&)[2]) {
#pragma unroll
    for (int e = 0; e < kChannelsLastStreamRun; ++e) {
      const int64_t slice = args.channels_last_divisors.by_slice_channels.quotient(first_channel + e);
      center[e] = Op::template context<true>(args, slice).center;
    }
  }
  __device__ __forceinline__ void add(Block (&block)[kChannelsLastStreamRun], const StreamRun<T> (&v)[2]) const {
#pragma unroll
    for (int e = 0; e < kChannelsLastStreamRun; ++e) {
      add_gradient_terms(block[e], Traits<T>::to_acc(v[0].v[e]), center[e], Traits<T>::to_acc(v[1].v[e]));
    }
  }
  __device__ __forceinline__ typename Op::SplitPartial partial(int64_t, int, const Sum& sums, bool* lost) const {
    *lost = false;
    return typename Op::SplitPartial{sums.first, sums.second, sums.third, 0.0};
  }
};

// Whether Op's reduction can stream (plan_internal.h channels_last_can_stream says where the plan
// asks for it): the plain ops' (no activation, no channel affine), with float32 blocks.
template <typename Op>
inline constexpr bool kStreamsReduction =
    (std::is_same_v<Op, ForwardOp<typename Op::Elem, false>> ||
     std::is_same_v<Op, BackwardOp<typename Op::Elem, false>>) &&
    std::is_same_v<typename Op::Acc, float>;

// A block's sums added into a part's (float64), and a sum's fields added to those of the lane
// `offset` away (both lanes' operands the same: the sum is the same bits in both).
__device__ __forceinline__ void add_block(PairSum<double>& sum, const PairSum<float>& block) {
  sum.first += block.first;
  sum.second += block.second;
}
__device__ __forceinline__ void add_block(TripleSum<double>& sum, const TripleSum<float>& block) {
  sum.first += block.first;
  sum.second += block.second;
  sum.third += block.third;
}
template <typename Acc>
__device__ __forceinline__ void add_xor_lane(PairSum<Acc>& sum, int offset) {
  sum.first += __shfl_xor_sync(0xffffffffu, sum.first, offset);
  sum.second += __shfl_xor_sync(0xffffffffu, sum.second, offset);
}
template <typename Acc>
__device__ __forceinline__ void add_xor_lane(TripleSum<Acc>& sum, int offset) {
  sum.first += __shfl_xor_sync(0xffffffffu, sum.first, offset);
  sum.second += __shfl_xor_sync(0xffffffffu, sum.second, offset);
  sum.third += __shfl_xor_sync(0xffffffffu, sum.third, offset);
}

// A barrier of the streamed reduction's consumer warps only (its producer warp has left).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;" : : "r"(kChannelsLastStreamWarps * 32) : "memory");
}

// The sums of each of a thread's channels (a run of kVec of them, the same run in `runs`-th lanes)
// added over the lanes of its run in its warp (xor shuffles, whose two operands are the same in both
// lanes) and left by the run's first lanes in `warp_sums`, a cell a channel a warp; and a channel's
// total over the cells of the first `warps` warps, in their order (in Total). Together the sums over
// every thread of a run in a fixed order; the cells are read past a barrier.
template <int kVec, typename Sum>
__device__ __forceinline__ void leave_warp_sums(Sum (&sums)[kVec], Sum* warp_sums, int runs, int64_t channels) {
  for (int offset = runs; offset < 32; offset *= 2) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) add_xor_lane(sums[e], offset);
  }
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (lane < runs) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) warp_sums[warp * channels + lane * kVec + e] = sums[e];
  }
}
__device__ __forceinline__ PairSum<double> widened(const PairSum<float>& sum) { return {sum.first, sum.second}; }
__device__ __forceinline__ TripleSum<double> widened(const TripleSum<float>& sum) {
  return {sum.first, sum.second, sum.third};
}
template <typename Total, typename Sum>
__device__ __forceinline__ Total warp_sums_total(const Sum* warp_sums, int warps, int64_t channels, int64_t channel) {
  const auto as_total = [](const Sum& sum) {
    if constexpr (std::is_same_v<Total, Sum>) {
      return sum;
    } else {
      return widened(sum);
    }
  };
  Total total = as_total(warp_sums[channel]);
  for (int w = 1; w < warps; ++w) total = total + as_total(warp_sums[w * channels + channel]);
  return total;
}

// The consumer warps' sums of each of a thread's channels over every thread of its run (above):
// every thread gets its run's totals. The cells are free again after the caller's next
// consumers_sync.
template <int kVec, typename Sum>
__device__ __forceinline__ void sum_over_consumers(Sum (&sums)[kVec], Sum* warp_sums, int runs, int64_t channels) {
  leave_warp_sums(sums, warp_sums, runs, channels);
  consumers_sync();
  const int run = static_cast<int>(threadIdx.x) % 32 % runs;
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    sums[e] = warp_sums_total<Sum>(warp_sums, kChannelsLastStreamWarps, channels, run * kVec + e);
  }
}

// Part `part` of a sample in the streamed kernel: rows [*begin, *begin + the result), the parts'
// lengths differing by one at most.
__device__ __forceinline__ int64_t stream_part_rows(const KernelArgs& args, int64_t part, int64_t* begin) {
  const int64_t even = args.channel_len / args.stream_parts;
  const int64_t longer = args.channel_len % args.stream_parts;
  *begin = part * even + min(part, longer);
  return even + (part < longer ? 1 : 0);
}

// A thread's place in the streamed kernel's ring: the stage, and the parity of its current phase
// (the producer and every consumer thread step through the same sequence).
struct RingPosition {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == kChannelsLastStreamStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// The elementwise pass of the streamed kernel's part (kApplies: a CTA's one part, blockIdx.x), by
// its consumer threads, the ring `at` where the reduction left it: its j-th stage
// is the part's last kStages stages in order (still there), then the rest from the last back.
// A stage holds each input's rows in turn (kChannelsLastStreamStageBytes / kInputs each); a full
// one is an array of 16-byte packs an input whose i-th holds channels (i * its elements) mod C on:
// a thread takes packs t, t + 256, ... of the same channels (256 packs hold whole rows); a stage
// of fewer rows is taken by runs as the reduction takes it. `cells`: the sample's coefficients, a
// cell a channel; `stage_rows`: the kernel's rows a stage.
template <typename Op>
__device__ __forceinline__ void apply_streamed_part(const KernelArgs& args, const unsigned char* smem,
                                                    const unsigned char* cells, uint64_t* full, uint64_t* empty,
                                                    RingPosition at, int stage_rows) {
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  using Coefficients = typename Op::Coefficients;
  using Run = StreamRun<T>;
  constexpr int kInputs = Op::kInputs;
  constexpr int kStages = kChannelsLastStreamStages;
  constexpr int kConsumers = kChannelsLastStreamWarps * 32;
  constexpr int kVec = kVecOf<T>;
  constexpr int64_t kInputBytes = channels_last_stream_input_bytes(kInputs);
  constexpr int kPacksAStage = static_cast<int>(kInputBytes / (kConsumers * sizeof(Pack<T>)));
  constexpr int kRun = kChannelsLastStreamRun;
  const int64_t channels = args.channels;
  const int64_t parts = args.stream_parts;
  int64_t begin = 0;
  const int64_t len = stream_part_rows(args, blockIdx.x % parts, &begin);
  T* const part_out = static_cast<T*>(args.out) + (blockIdx.x / parts * args.channel_len + begin) * channels;
  const auto coefficients_of = [&](int64_t channel) {
    return *reinterpret_cast<const Coefficients*>(cells + channel * kSliceCoefficientBytes);
  };
  Coefficients c[kVec];  // of a full stage's packs
#pragma unroll
  for (int e = 0; e < kVec; ++e) c[e] = coefficients_of((threadIdx.x * kVec + e) % channels);
  const int runs = static_cast<int>(channels / kRun);
  const int run = static_cast<int>(threadIdx.x) % runs;
  const int first_row = static_cast<int>(threadIdx.x) / runs;
  const int rows_a_pass = kConsumers / runs;
  const int64_t stages_of_part = (len + stage_rows - 1) / stage_rows;
  const typename Op::Epilogue epilogue = Op::Epilogue::of(args);
  epilogue.visit([&](const auto& activation) {
    for (int64_t j = 0; j < stages_of_part; ++j) {
      const int64_t k = j < kStages ? stages_of_part - kStages + j : stages_of_part - 1 - j;
      const int n = static_cast<int>(min(static_cast<int64_t>(stage_rows), len - k * stage_rows));
      wait_phase(&full[at.stage], at.phase);
      const unsigned char* const staged = smem + at.stage * kChannelsLastStreamStageBytes;
      T* const dst = part_out + k * stage_rows * channels;
      if (n == stage_rows) {
        Pack<T> v[kInputs][kPacksAStage];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) {
#pragma unroll
          for (int m = 0; m < kPacksAStage; ++m) {
            v[i][m] = reinterpret_cast<const Pack<T>*>(staged + i * kInputBytes)[threadIdx.x + m * kConsumers];
          }
        }
#pragma unroll
        for (int m = 0; m < kPacksAStage; ++m) {
          Pack<T> y;
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            Acc element[kInputs];
#pragma unroll
            for (int i = 0; i < kInputs; ++i) element[i] = Traits<T>::to_acc(v[i][m].v[e]);
            y.v[e] = Traits<T>::from_acc(Op::apply(c[e], activation, element));
          }
          store_output_pack(dst + (threadIdx.x + m * kConsumers) * kVec, y, args.evict_first);
        }
      } else {
        for (int row = first_row; row < n; row += rows_a_pass) {
          const int64_t at_run = static_cast<int64_t>(row) * channels + run * kRun;
          Run v[kInputs];
#pragma unroll
          for (int i = 0; i < kInputs; ++i) {
            v[i] = *reinterpret_cast<const Run*>(reinterpret_cast<const T*>(staged + i * kInputBytes) + at_run);
          }
          Run y;
#pragma unroll
          for (int e = 0; e < kRun; ++e) {
            Acc element[kInputs];
#pragma unroll
            for (int i = 0; i < kInputs; ++i) element[i] = Traits<T>::to_acc(v[i].v[e]);
            y.v[e] = Traits<T>::from_acc(Op::apply(coefficients_of(run * kRun + e), activation, element));
          }
          *reinterpret_cast<Run*>(dst + at_run) = y;
        }
      }
      cuda::ptx::mbarrier_arrive(&empty[at.stage]);
      at.advance();
    }
  });
}

// The three kernels' reduction streamed (Plan::stream_parts, in place of
// channels_last_reduce_kernel), for the plain ops (kStreamsReduction): a CTA takes a part of a
// sample's rows at a time, the grid striding over the (sample, part) items. Its producer warp's
// first lane moves the parts' rows of each input through a ring of kChannelsLastStreamStages
// buffers by bulk copies, running ahead across parts, while the consumer warps add each run of four
// channels they take into sums in registers (StreamedSums: the forward's one pass around each
// part's first row, the backward's sums of dy, dy * d and d), a stage's few rows a thread in float32,
// then into float64 sums (a float64 sum an element ran no faster than the tiles: dev/VARIANTS.md
// 93). At a part's end the sums are added over the CTA (sum_over_consumers) into each channel's
// partial, kept as a tile's would be for the finish kernel; where the forward's one pass may have
// lost digits in any channel (StreamedSums::kMayLoseDigits), the part is read again from global
// memory for the deviations from each channel's rounded mean (ForwardOp::from_deviations). No
// tile's serial steps (staged, waited for, column trees and barriers) stand between the loads: they
// cost the tiles' reduction a third of its time (dev/VARIANTS.md 80).
//
// kApplies (Plan::stream_applies): the kernel then runs the elementwise pass too. Its CTAs take a
// part each, all resident at once (a cooperative launch): once a CTA's partials are written it
// arrives on its sample's counter, and once every part of the sample has, it combines the sample's
// partials into its channels' coefficients (as the finish kernel does) and writes its part: first
// the rows its ring's stages still hold (the part's last: the planner gives each part at least a
// ring of them), then the rest from the last back, moved through the ring again (those read last
// are the likeliest still in L2). Where Plan::evict_first, the part's rows past those the ring and a
// share of L2 keep are read evict-first, and so are the rows read again and the output, so that L2
// keeps what the second read is to find there. A thread stores only elements it read: y may be x,
// dx may be dy. The backward without dx (args.out null: weight gradients only) stops after the
// combine.
template <typename Op, bool kApplies>
__global__ void __launch_bounds__(kChannelsLastStreamThreads, kChannelsLastStreamCtasPerSm)
    channels_last_stream_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  static_assert(kStreamsReduction<Op>, "the streamed reduction is the plain ops'");
  using Sums = StreamedSums<Op>;
  using Sum = typename Sums::Sum;
  constexpr int kInputs = Op::kInputs;
  static_assert(sizeof(Sum) == channels_last_stream_sum_bytes(kInputs), "plan_internal.h sizes the sums' cells");
  constexpr int kVec = kChannelsLastStreamRun;
  using Run = StreamRun<T>;
  constexpr int kStages = kChannelsLastStreamStages;
  constexpr int kConsumers = kChannelsLastStreamWarps * 32;
  constexpr int64_t kInputBytes = channels_last_stream_input_bytes(kInputs);
  constexpr int kRunsAStage = static_cast<int>(kInputBytes / (kConsumers * sizeof(Run)));
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full[kStages];   // a stage's bytes have landed
  __shared__ uint64_t empty[kStages];  // every consumer thread is past its reads of a stage
  __shared__ int lost_in[2];  // whether a part's one pass may have lost digits, parts alternating
  const int64_t channels = args.channels;
  const int runs = static_cast<int>(channels / kVec);  // a power of two up to 32 (the planner's)
  const int64_t row_bytes = channels * static_cast<int64_t>(sizeof(T));
  const int stage_rows = static_cast<int>(kInputBytes / row_bytes);
  const int64_t rows = args.channel_len;
  const int64_t parts = args.stream_parts;
  const int64_t items = args.channels_last_divisors.samples * parts;
  const T* inputs[kInputs] = {static_cast<const T*>(args.x)};
  if constexpr (kInputs == 2) inputs[1] = static_cast<const T*>(args.dy);
  const bool applies = kApplies && args.out != nullptr;  // the same in every thread
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], kConsumers);
    }
    lost_in[0] = lost_in[1] = 0;
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barriers
  }
  __syncthreads();
  const auto part_rows = [&](int64_t part, int64_t* begin) { return stream_part_rows(args, part, begin); };
  RingPosition at;
  if (threadIdx.x >= kConsumers) {  // the producer warp
    if (threadIdx.x == kConsumers) {
      // Rows [r, r + a stage's) of a part of `len` rows at `from` (of each input) into the stage,
      // once it is free; `evict`: their lines marked evict-first in L2.
      const auto copy_stage = [&](int64_t from, int64_t r, int64_t len, bool evict) {
        const auto bytes = static_cast<uint32_t>(min(static_cast<int64_t>(stage_rows), len - r) * row_bytes);
        arrive_expecting(&full[at.stage], bytes * kInputs);
#pragma unroll
        for (int i = 0; i < kInputs; ++i) {
          unsigned char* const dst = smem + at.stage * kChannelsLastStreamStageBytes + i * kInputBytes;
          const T* const src = inputs[i] + from + r * channels;
          bulk_copy_to_shared(dst, src, bytes, &full[at.stage], evict);
        }
      };
      // Where the kernel applies with L2 hints (Plan::evict_first), the rows its second read is to
      // find in L2 (a share of config.h kChannelsLastStreamL2KeepBytes beyond the ring's) stay
      // unmarked; the rest of the part, read again from device memory anyway, is marked evict-first.
      const bool hinted = applies && args.evict_first;
      const int64_t keep_rows =
          kStages * static_cast<int64_t>(stage_rows) + kChannelsLastStreamL2KeepBytes / gridDim.x / (row_bytes * kInputs);
      for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        int64_t begin = 0;
        const int64_t len = part_rows(item % parts, &begin);
        const int64_t from = (item / parts * rows + begin) * channels;
        for (int64_t r = 0; r < len; r += stage_rows) {
          wait_phase(&empty[at.stage], at.phase ^ 1);  // a fresh barrier's previous phase counts as complete
          copy_stage(from, r, len, hinted && r + stage_rows <= len - keep_rows);
          at.advance();
        }
      }
      if (applies) {  // the CTA's one part again: the stages its ring holds, then back from the last
        int64_t begin = 0;
        const int64_t len = part_rows(blockIdx.x % parts, &begin);
        const int64_t from = (blockIdx.x / parts * rows + begin) * channels;
        const int64_t stages_of_part = (len + stage_rows - 1) / stage_rows;
        for (int64_t j = 0; j < stages_of_part; ++j) {
          wait_phase(&empty[at.stage], at.phase ^ 1);
          if (j < kStages) {
            cuda::ptx::mbarrier_arrive(&full[at.stage]);  // its bytes are there already
          } else {
            copy_stage(from, (stages_of_part - 1 - j) * stage_rows, len, hinted);
          }
          at.advance();
        }
      }
    }
    return;
  }
  auto* const warp_sums = reinterpret_cast<Sum*>(smem + kStages * kChannelsLastStreamStageBytes);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int run = static_cast<int>(threadIdx.x) % runs;
  const int first_row = static_cast<int>(threadIdx.x) / runs;
  const int rows_a_pass = kConsumers / runs;
  auto* const partials = static_cast<typename Op::SplitPartial*>(args.split_partials);
  int turn = 0;  // lost_in's of the current part
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t sample = item / parts;
    const int64_t part = item % parts;
    int64_t begin = 0;
    const int64_t len = part_rows(part, &begin);
    const int64_t first_channel = sample * channels + run * kVec;  // of the batch's N * C
    Sums reduction;
    Sum sums[kVec] = {};
    for (int64_t r = 0; r < len; r += stage_rows) {
      const int n = static_cast<int>(min(static_cast<int64_t>(stage_rows), len - r));
      wait_phase(&full[at.stage], at.phase);
      const unsigned char* const stage = smem + at.stage * kChannelsLastStreamStageBytes;
      const auto staged = [&](int i) { return reinterpret_cast<const T*>(stage + i * kInputBytes) + run * kVec; };
      if (r == 0) {  // the part's first row: no round trip to global memory between parts
        const Run* first[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) first[i] = reinterpret_cast<const Run*>(staged(i));
        reduction.begin(args, first_channel, first);
      }
      // The stage's rows in float32, then into the float64 sums. Rows are whole runs, so each
      // input's rows are an array of runs whose i-th is channel run i % runs: a thread takes runs
      // t, t + 256, ..., the same channels in each (256 is a multiple of runs), kRunsAStage of them
      // in a full stage.
      typename Sums::Block block[kVec] = {};
      if (n == stage_rows) {
        Run v[kRunsAStage][kInputs];
#pragma unroll
        for (int k = 0; k < kRunsAStage; ++k) {
#pragma unroll
          for (int i = 0; i < kInputs; ++i) {
            v[k][i] = reinterpret_cast<const Run*>(stage + i * kInputBytes)[threadIdx.x + k * kConsumers];
          }
        }
#pragma unroll
        for (int k = 0; k < kRunsAStage; ++k) reduction.add(block, v[k]);
      } else {
        for (int row = first_row; row < n; row += rows_a_pass) {
          Run v[kInputs];
#pragma unroll
          for (int i = 0; i < kInputs; ++i) v[i] = *reinterpret_cast<const Run*>(staged(i) + row * channels);
          reduction.add(block, v);
        }
      }
      // Each thread arrives (a warp's lane for it, after __syncwarp, is a race to compute-sanitizer).
      cuda::ptx::mbarrier_arrive(&empty[at.stage]);
      at.advance();
#pragma unroll
      for (int e = 0; e < kVec; ++e) add_block(sums[e], block[e]);
    }
    sum_over_consumers(sums, warp_sums, runs, channels);
    bool again = false;
    if constexpr (Sums::kMayLoseDigits) {
      // Each channel's partial is derived from its sums again where it is used below: kept in
      // registers across the barrier, the four of them spill (ptxas -v, 96 registers).
      bool lost = false;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        bool second = false;
        reduction.partial(len, e, sums[e], &second);
        lost = lost || second;
      }
      if (__any_sync(0xffffffffu, lost) && lane == 0) atomicOr(&lost_in[turn], 1);
      consumers_sync();  // every check is in; the sums' cells are free
      again = lost_in[turn] != 0;
      if (threadIdx.x == 0) lost_in[turn ^ 1] = 0;  // the next part's, set only past its sums' first barrier
      turn ^= 1;
    } else {
      consumers_sync();  // the sums' cells are free
    }
    if (!again) {
      if (first_row == 0) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          bool lost = false;
          partials[(first_channel + e) * parts + part] = reduction.partial(len, e, sums[e], &lost);
        }
      }
      continue;
    }
    if constexpr (Sums::kMayLoseDigits) {
      // The rows again from global memory: their deviations from each channel's rounded mean.
      float mean[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        bool second = false;
        mean[e] = reduction.statistics(len, e, sums[e], &second).mean;
        sums[e] = Sum{0.0, 0.0};
      }
      const T* const from = inputs[0] + (sample * rows + begin) * channels + run * kVec;
      for (int64_t row = first_row; row < len; row += rows_a_pass) {
        const Run v = *reinterpret_cast<const Run*>(from + row * channels);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          Op::add_shifted(static_cast<double>(Traits<T>::to_acc(v.v[e])) - static_cast<double>(mean[e]), sums[e]);
        }
      }
      sum_over_consumers(sums, warp_sums, runs, channels);
      consumers_sync();  // the cells are free
      if (first_row == 0) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          partials[(first_channel + e) * parts + part] = Op::to_split(Op::from_deviations(len, mean[e], sums[e]));
        }
      }
    }
  }
  if constexpr (kApplies) {
    const int64_t sample = blockIdx.x / parts;
    __threadfence();   // this thread's partials, before its sample's CTAs read them
    consumers_sync();
    if (threadIdx.x == 0) {
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[sample]);
      arrivals.fetch_add(1u, cuda::memory_order_release);
      while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(parts)) {
      }
    }
    consumers_sync();
    unsigned char* const cells = smem + kStages * kChannelsLastStreamStageBytes +
                                 kChannelsLastStreamWarps * channels * static_cast<int64_t>(sizeof(Sum));
    const int64_t slices = args.groups;
    const int count = static_cast<int>(args.slice_channels * parts);  // a slice's partials (the planner's int)
    combine_slices<Op, kConsumers>(
        args, sample * slices, slices, count,
        [&](int64_t s, int i) {
          return load_l2<typename Op::SplitPartial>(partials + (sample * slices + s) * count + i);
        },
        blockIdx.x % parts == 0, cells, [] { consumers_sync(); }, kConsumers);
    if (!applies) return;
    consumers_sync();
    apply_streamed_part<Op>(args, smem, cells, full, empty, at, stage_rows);
  }
}

// The sum over a slice's lanes in the finish kernel: the CTA's, or the warp's.
template <int kGroups>
__device__ __forceinline__ auto finish_combine_sum() {
  if constexpr (kGroups == 1) {
    __shared__ typename BlockAllSum<double, kChannelsLastFinishThreads>::TempStorage storage;
    return BlockAllSum<double, kChannelsLastFinishThreads>{storage};
  } else {
    return GroupAllSum<32, kChannelsLastFinishThreads>{};
  }
}

// The finish kernel's slices: a CTA's each (kLanes = its threads), or a warp's each (kLanes = 32)
// where a slice has few partials (config.h kChannelsLastFinishWarpParts), so that a CTA's threads
// do not wait at its barriers on a few loads each. A CTA takes finish_slices_a_cta(kLanes) at once.
__host__ __device__ constexpr int finish_slices_a_cta(int lanes) { return kChannelsLastFinishThreads / lanes; }
template <typename Op, int kLanes>
__global__ void __launch_bounds__(kChannelsLastFinishThreads) channels_last_finish_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using Coefficients = typename Op::Coefficients;
  using SplitSums = typename Op::SplitPartial;
  constexpr int kGroups = finish_slices_a_cta(kLanes);
  static_assert(kLanes == 32 || kGroups == 1, "a warp a slice, or the CTA");
  const auto* partials = static_cast<const SplitSums*>(args.split_partials);
  auto* coefficients = static_cast<unsigned char*>(args.slice_coefficients);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  // The partials of a slice's channels lie together: the tiles of each, channel after channel.
  const int64_t parts = args.slice_channels * reduce_parts_of(args);  // the planner keeps it in int
  const int64_t step = static_cast<int64_t>(gridDim.x) * kGroups;
  for (int64_t slice = blockIdx.x * kGroups + threadIdx.x / kLanes; slice < args.num_slices; slice += step) {
    const SplitSums* slice_partials = partials + slice * parts;
    auto combine_sum = finish_combine_sum<kGroups>();
    const auto partial = [&](int i) { return load_l2<SplitSums>(slice_partials + i); };
    const SplitSums stats =
        Op::template combine_split<kCombineInFlight>(partial, static_cast<int>(parts), lane, kLanes, combine_sum);
    // Every lane has the slice's sums and finishes it alike; the first writes its outputs.
    const Coefficients c =
        Op::finish(args, slice, Op::template context<true>(args, slice), Op::from_split(stats), lane == 0);
    for (int64_t local = lane; local < args.slice_channels; local += kLanes) {
      *reinterpret_cast<Coefficients*>(coefficients + (slice * args.slice_channels + local) * kSliceCoefficientBytes) =
          channel_coefficients<Op>(args, slice, c, local);
    }
  }
}

// The elementwise pass of a staged tile of whole rows (the bulk path): every element of the run
// from its inputs and its channel's coefficients (`coefficients`: the sample's first slice's;
// `by_channels`: C's divisor), with 16-byte stores (L2 only, or evict-first there where
// `evict_first`) where every tensor is aligned alike modulo 16 (`coaligned`). The CTA's threads are
// a multiple of C, so a thread's channels are the same in every vector (or element) it takes: it
// loads their coefficients once. A thread stores only elements it read: dst may be an input.
template <typename Op, typename T, int kInputs, typename Act>
__device__ __forceinline__ void apply_staged_rows(const StagedTile<T, kInputs>& tile, int64_t len, T* dst,
                                                  bool coaligned, const unsigned char* coefficients,
                                                  const FastDivisor& by_channels, const Act& activation,
                                                  bool evict_first = false) {
  using Acc = typename Op::Acc;
  using Coefficients = typename Op::Coefficients;
  const auto coefficients_of = [&](int64_t j) {  // element j's channel's; written by the finish kernel
    return *reinterpret_cast<const Coefficients*>(coefficients + by_channels.remainder(j) * kSliceCoefficientBytes);
  };
  const auto output = [&](const Coefficients& c, int64_t j) {
    Acc v[kInputs];
#pragma unroll
    for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(tile.staged[i][j]);
    return Traits<T>::from_acc(Op::apply(c, activation, v));
  };
  const int64_t threads = blockDim.x;
  if (coaligned) {
    constexpr int kVec = kVecOf<T>;
    const RaggedRange<T>& range = tile.range;
    Coefficients c[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) c[e] = coefficients_of(range.head + threadIdx.x * kVec + e);
    for (int64_t b = threadIdx.x; b < range.body_vecs; b += threads) {
      Pack<T> packs[kInputs];
#pragma unroll
      for (int i = 0; i < kInputs; ++i) packs[i] = reinterpret_cast<const Pack<T>*>(tile.staged[i] + range.head)[b];
      Pack<T> out;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        Acc v[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) v[i] = Traits<T>::to_acc(packs[i].v[e]);
        out.v[e] = Traits<T>::from_acc(Op::apply(c[e], activation, v));
      }
      store_output_pack(dst + range.head + b * kVec, out, evict_first);
    }
    if (threadIdx.x < range.ragged()) {
      const int64_t j = range.ragged_index(threadIdx.x);
      dst[j] = output(coefficients_of(j), j);
    }
  } else {
    const Coefficients c = coefficients_of(threadIdx.x);
    for (int64_t j = threadIdx.x; j < len; j += threads) dst[j] = output(c, j);
  }
}

// The elementwise pass walks the tiles from the last: the reduction's CTAs took them in order, so
// the tiles it read last are the likeliest still in L2 (dev/VARIANTS.md 79). Where the plan says so
// (Plan::evict_first), what it reads and writes is marked evict-first in L2, so that the tiles it
// has yet to reach stay there.
template <typename Op, TileLoad kLoad>
__global__ void __launch_bounds__(kChannelsLastThreads, kApplyCtasPerSm) channels_last_apply_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using Coefficients = typename Op::Coefficients;
  constexpr int kInputs = Op::kInputs;
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  T* const out = static_cast<T*>(args.out);
  const auto* coefficients = static_cast<const unsigned char*>(args.slice_coefficients);
  const int64_t items = channels_last_items(args);
  const typename Op::Epilogue epilogue = Op::Epilogue::of(args);  // the activation, visited once
  if constexpr (kLoad == TileLoad::kBulk) {
    extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ Barrier loaded;
    init_tile_barrier(loaded);
    __syncthreads();
    for (int64_t walked = blockIdx.x; walked < items; walked += gridDim.x) {
      const Tile tile = tile_of(args, items - 1 - walked);
      const StagedTile<T, kInputs> staged =
          stage_tile<kLoad, kInputs>(inputs, tile, smem, loaded, args, args.evict_first);
      epilogue.visit([&](const auto& activation) {
        apply_staged_rows<Op>(staged, tile.rows * args.channels, out + tile.offset, args.coaligned,
                              coefficients + tile.sample * args.channels * kSliceCoefficientBytes,
                              args.channels_last_divisors.by_channel_block,
                              activation, args.evict_first);
      });
      __syncthreads();  // every thread is past its last read of the staged tile
    }
  } else {
    // Straight from global memory: a thread takes one unit of the block's row, the
    // same in every row it takes.
    using Unit = UnitOf<T, kLoad>;
    constexpr int kElems = kUnitElems<T, kLoad>;
    constexpr int kBatch = kUnitBatch<T, kLoad, kInputs, kApplyBatchBytes>;
    const ChannelsLastDivisors& d = args.channels_last_divisors;  // a full block's units
    const int rows_a_pass = static_cast<int>(d.by_unit_rows_a_pass[0].divisor);
    // Not a structured binding: the visitor below captures them (C++17).
    const FastDivisor::Split at = d.by_units_a_row[0].divmod(static_cast<int>(threadIdx.x));
    const int row = at.quotient, unit = at.remainder;
    epilogue.visit([&](const auto& activation) {
      for (int64_t walked = blockIdx.x; walked < items; walked += gridDim.x) {
        const Tile tile = tile_of(args, items - 1 - walked);
        if (unit * kElems >= tile.width || row >= tile.rows) continue;
        const int64_t first_slice = tile.sample * args.channels + tile.first_channel + unit * kElems;
        Coefficients c[kElems];  // written by the finish kernel
#pragma unroll
        for (int e = 0; e < kElems; ++e) {
          c[e] = *reinterpret_cast<const Coefficients*>(coefficients + (first_slice + e) * kSliceCoefficientBytes);
        }
        const int64_t first = tile.offset + static_cast<int64_t>(row) * args.channels + unit * kElems;
        const int64_t step_elems = static_cast<int64_t>(rows_a_pass) * args.channels;
        const int64_t own_rows = d.by_unit_rows_a_pass[0].ceil_quotient(tile.rows - row);
        // A batch is loaded before any of it is stored: out may be an input (each element is its own).
        for (int64_t k = 0; k < own_rows; k += kBatch) {
          Unit v[kBatch][kInputs];
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            if (k + b >= own_rows) break;
#pragma unroll
            for (int i = 0; i < kInputs; ++i) {
              v[b][i] = load_unit<T, kLoad>(inputs[i] + first + (k + b) * step_elems, args.evict_first);
            }
          }
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            if (k + b >= own_rows) break;
            store_unit<T, kLoad>(out + first + (k + b) * step_elems, apply_unit<Op, kLoad>(v[b], c, activation),
                                 args.evict_first);
          }
        }
      }
    });
  }
}

// The elementwise pass of a staged tile of a channel block (rows packed in shared memory, C apart
// in global memory): a thread takes one unit of the block's row (a 16-byte run of channels, or an
// element), the same in every row it takes, so it reads its channels' coefficients (`coefficients`:
// the block's, a cell a channel) once. A thread stores only elements it read: dst may be an input.
template <typename Op, TileLoad kLoad, typename T, int kInputs, typename Act>
__device__ __forceinline__ void apply_staged_block(const KernelArgs& args, const Tile& tile,
                                                   const StagedTile<T, kInputs>& staged, T* dst,
                                                   const unsigned char* coefficients, const Act& activation) {
  using Coefficients = typename Op::Coefficients;
  using Unit = UnitOf<T, kLoad>;
  constexpr int kElems = kUnitElems<T, kLoad>;
  const ChannelsLastDivisors& d = args.channels_last_divisors;  // a full block's units
  const int rows_a_pass = static_cast<int>(d.by_unit_rows_a_pass[0].divisor);  // the planner's threads: whole rows
  const auto [first_row, unit] = d.by_units_a_row[0].divmod(static_cast<int>(threadIdx.x));
  if (unit * kElems >= tile.width) return;
  Coefficients c[kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) {
    c[e] = *reinterpret_cast<const Coefficients*>(coefficients + (unit * kElems + e) * kSliceCoefficientBytes);
  }
  for (int64_t r = first_row; r < tile.rows; r += rows_a_pass) {
    Unit v[kInputs];
#pragma unroll
    for (int i = 0; i < kInputs; ++i) {
      v[i] = *reinterpret_cast<const Unit*>(staged.staged[i] + r * args.channel_block + unit * kElems);
    }
    store_unit<T, kLoad>(dst + r * args.channels + unit * kElems, apply_unit<Op, kLoad>(v, c, activation));
  }
}

// The resident form (plan.exchange == Exchange::kGlobal): a group of parts_per_slice CTAs holds an
// item's tiles, one each, in shared memory from their reduction to their elementwise pass, so every
// input is read once. An item is a sample in tiles of whole rows (kLoad kBulk), where the sample's
// tiles fit on chip at once; or, on channel blocks (kVector), a block of whole slices' channels
// whose every row one CTA holds (a group of one). A group of more than one exchanges its partials
// through L2, one a slice from each CTA: each CTA arrives on the item's counter, and once the whole
// group has, every CTA combines every slice of the item (the op's combine_split, kCombineLanes
// lanes a slice) into its channels' coefficients in shared memory, then writes its tile; the
// cooperative launch keeps every CTA of a group resident. A CTA alone holds whole slices: it
// combines them from shared memory, with no exchange. The groups stride over the items. kThreads:
// at most kChannelsLastThreads at up to kChannelsLastResidentCtasPerSm CTAs an SM, or
// kChannelsLastResidentWideThreads alone on its SM, whole rows a pass.
template <typename Op, int kThreads, TileLoad kLoad>
__global__ void __launch_bounds__(kThreads, kThreads > kChannelsLastThreads      ? 1
                                            : kLoad == TileLoad::kBulk ? kChannelsLastResidentCtasPerSm
                                                                       : kChannelsLastBlockCtasPerSm)
    channels_last_resident_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using SplitSums = typename Op::SplitPartial;
  constexpr int kInputs = Op::kInputs;
  static_assert(sizeof(SplitSums) <= ColumnSum::kCellBytes, "a slice's sums fit a column sum's cell");
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ alignas(16) unsigned char scratch[kThreads * ColumnSum::kCellBytes];
  if constexpr (kLoad == TileLoad::kBulk) init_tile_barrier(loaded);
  __syncthreads();
  const TileThread t(args);
  const ColumnSum all_sum{scratch, t};
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  auto* const partials = static_cast<SplitSums*>(args.split_partials);
  // The block's coefficients, a cell per channel after the tile's regions (plan_internal.h
  // channels_last_smem_bytes).
  const int64_t tile_bytes = args.tile_rows * args.channel_block * static_cast<int64_t>(sizeof(T));
  unsigned char* const coefficients =
      smem + kInputs * (kLoad == TileLoad::kBulk ? shared_region_bytes(tile_bytes) : tile_bytes);
  // A CTA alone keeps each slice's sums in the column sums' cells, free once the tile is reduced
  // (a block holds no more slices than the CTA has threads).
  auto* const slice_sums = reinterpret_cast<SplitSums*>(scratch);
  const ChannelsLastDivisors& d = args.channels_last_divisors;
  const int group = args.parts_per_slice;
  const bool alone = group == 1;
  const int first_item = d.by_tiles.quotient(static_cast<int>(blockIdx.x));
  const int rank = static_cast<int>(blockIdx.x) - first_item * group;
  const int groups = d.by_tiles.quotient(static_cast<int>(gridDim.x));
  const int64_t items = d.samples * d.by_blocks.divisor;  // a group's: a sample's channel block
  const typename Op::Epilogue epilogue = Op::Epilogue::of(args);
  for (int64_t item = first_item; item < items; item += groups) {
    const Tile tile = tile_of(args, item * group + rank);
    const TileColumnOf<Op> of = tile_column_of<Op>(args, tile, t);
    const StagedTile<T, kInputs> staged = stage_tile<kLoad, kInputs>(inputs, tile, smem, loaded, args);
    // The tile's slices (whole ones: a block starts at a slice's first channel).
    const int64_t first_slice = d.by_slice_channels.quotient(tile.sample * args.channels + tile.first_channel);
    const int64_t slices = d.by_slice_channels.quotient(tile.width);
    // A slice's partial: in a group, one a CTA at partials[slice * group + rank]; alone, in
    // slice_sums. A GroupNorm slice's channels are combined in the CTA first (their partials kept
    // meanwhile in the coefficient cells), so that a group's combine reads `group` partials a
    // slice, not channels x group.
    if (args.slice_channels == 1) {
      if (alone) {
        reduce_tile_columns<Op>(args, tile, staged, t, of, all_sum,
                                [&](const SplitSums& partial, int c, int64_t) { slice_sums[c] = partial; });
      } else {
        reduce_tile_columns<Op>(args, tile, staged, t, of, all_sum, KeepInPartials<Op, true>{partials, group, rank});
      }
    } else {
      auto* const cells = reinterpret_cast<SplitSums*>(coefficients);
      static_assert(sizeof(SplitSums) <= kSliceCoefficientBytes, "a channel's partial fits its coefficient cell");
      reduce_tile_columns<Op>(args, tile, staged, t, of, all_sum,
                              [&](const SplitSums& partial, int c, int64_t) { cells[c] = partial; });
      for_each_lane_group(slices, [&](int64_t s, int lane, bool owner) {
        GroupAllSum<kCombineLanes, kThreads> lane_sum;
        const auto partial = [&](int i) { return cells[s * args.slice_channels + i]; };
        const SplitSums combined = Op::template combine_split<kCombineInFlight>(
            partial, static_cast<int>(args.slice_channels), lane, kCombineLanes, lane_sum);
        if (owner && lane == 0) {
          if (alone) {
            slice_sums[s] = combined;
          } else {
            partials[(first_slice + s) * group + rank] = combined;
            __threadfence();
          }
        }
      });
      __syncthreads();  // every slice's partial is kept; the cells are free for the coefficients
    }
    if (!alone) {
      if (threadIdx.x == 0) {  // after the barrier that follows every partial's fence
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[item]);
        arrivals.fetch_add(1u, cuda::memory_order_release);
        while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(group)) {
        }
      }
      __syncthreads();
    }
    combine_slices<Op, kThreads>(
        args, first_slice, slices, group,
        [&](int64_t s, int i) {
          return alone ? slice_sums[s] : load_l2<SplitSums>(partials + (first_slice + s) * group + i);
        },
        rank == 0, coefficients, [] { __syncthreads(); });
    __syncthreads();
    if (args.out != nullptr) {
      T* const dst = static_cast<T*>(args.out) + tile.offset;
      epilogue.visit([&](const auto& activation) {
        if constexpr (kLoad == TileLoad::kBulk) {
          apply_staged_rows<Op>(staged, tile.rows * args.channels, dst, args.coaligned, coefficients,
                                d.by_channel_block, activation);
        } else {
          apply_staged_block<Op, kLoad>(args, tile, staged, dst, coefficients, activation);
        }
      });
    }
    __syncthreads();  // the tile and the coefficients are free for the next item
  }
}

// The cluster form (plan.exchange == Exchange::kCluster, where plan_internal.h
// channels_last_cluster_runs): a cluster of parts_per_slice CTAs takes a sample at a time, the
// clusters striding over the samples. Each CTA holds its tile_rows rows of the sample's x (the last
// CTA the rest): the first tile_rows - register_len in shared memory, landed by
// kChannelsLastClusterPieces bulk copies, the rest in its threads' registers (the forward's; the
// backward's register_len is 0). config.h channels_last_cluster_shape gives each pass's threads, CTAs
// an SM and register runs. A sample takes:
//   sums      a thread takes a 16-byte run of channels on rows first_row, first_row + step, ... of
//             each piece and of its register part, and sums each channel's terms in float32
//             (ClusterSums: the forward's d and d^2, d = x - a shift; the backward's dy, dy * d and d,
//             d = x - the mean it was normalized with, dy read from global memory), added over the
//             CTA in a fixed order (leave_warp_sums, float32 in a warp, float64 over the warps by a
//             thread a channel), then over the cluster in rank order through distributed shared
//             memory at one cluster barrier (a cell a channel a CTA, in sets that alternate so that
//             a CTA writes one again only past another barrier no peer passes before it has read it);
//   finish    a thread a channel makes the channel's coefficients from the totals, by the op's own
//             rules (the forward's one pass from_shifted_sums, summed again around the mean where it
//             may have lost digits, as every other path's; the op's finish, its first CTA writing
//             the slice's outputs);
//   apply     the output from the held x (and dy read again), a piece at a time, each piece refilled
//             with the next sample's rows once its threads are past it; then the register part,
//             loaded again with the next sample's rows.
// x is read once from HBM; dy twice, the second read from L2 where the sample's few MiB still are.
// The next sample's context loads under this one's elementwise pass. Every CTA of a cluster takes
// the same samples, and none leaves while a peer may read its cells; cluster k starts its first
// sample k x Plan::stagger_cycles SM cycles late.
template <typename Op>
struct ClusterSums;
// The backward's plain op: dy, dy * d and d around the mean x was normalized with.
template <typename T>
struct ClusterSums<BackwardOp<T, false>> {
  using Sum = TripleSum<float>;
  using Total = TripleSum<double>;
  static constexpr int kCellSets = 2;
  static __device__ __forceinline__ float center(const typename BackwardOp<T, false>::Context& context) {
    return context.center;
  }
  static __device__ __forceinline__ void add(Sum& sum, float x, float center, float dy) {
    add_gradient_terms(sum, x, center, dy);
  }
};
// The forward's plain op: d and d^2 around a shift (the sample's first row, ForwardOp::Context; the
// mean where the one pass may have lost digits, in a third set of cells).
template <typename T>
struct ClusterSums<ForwardOp<T, false>> {
  using Sum = PairSum<float>;
  using Total = PairSum<double>;
  static constexpr int kCellSets = 3;
  static __device__ __forceinline__ float center(const typename ForwardOp<T, false>::Context& context) {
    return context.shift;
  }
  static __device__ __forceinline__ void add(Sum& sum, float x, float center, float) {
    add_shifted_terms(sum, x, center);
  }
};

template <typename Op>
struct ClusterShared {
  uint64_t landed[kChannelsLastClusterPieces];  // a piece's bytes are there
  typename ClusterSums<Op>::Total cells[ClusterSums<Op>::kCellSets][kChannelsLastClusterMaxChannels];  // CTA's sums
  float centers[kChannelsLastClusterMaxChannels];  // what each channel's terms are taken around
  typename Op::Coefficients coefficients[kChannelsLastClusterMaxChannels];
};

template <typename Op>
__global__ void __launch_bounds__(kChannelsLastClusterShape<Op::kInputs == 2>.threads,
                                  kChannelsLastClusterShape<Op::kInputs == 2>.ctas_per_sm)
    channels_last_cluster_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  using Sums = ClusterSums<Op>;
  constexpr ChannelsLastClusterShape kShape = kChannelsLastClusterShape<Op::kInputs == 2>;
  static_assert(kStreamsReduction<Op>, "the cluster form runs the plain ops");
  static_assert(sizeof(ClusterShared<Op>) <= kShape.static_bytes, "config.h counts its static cells");
  static_assert(sizeof(typename Sums::Sum) == kShape.sum_terms * sizeof(float), "config.h counts its warps' sums");
  constexpr int kInputs = Op::kInputs;
  constexpr int kVec = kVecOf<T>;
  constexpr int kThreads = kShape.threads;
  constexpr int kWarps = kThreads / 32;
  constexpr int kPieces = kChannelsLastClusterPieces;
  constexpr int kBatch = kChannelsLastClusterDyBatch<sizeof(T)>;
  constexpr int kRegisterRuns = kShape.register_runs > 0 ? kShape.register_runs : 1;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ ClusterShared<Op> shared;
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int group = args.parts_per_slice;
  const int channels = static_cast<int>(args.channels);
  const int64_t row_bytes = static_cast<int64_t>(channels) * sizeof(T);
  const int runs = channels / kVec;  // a power of two up to 32 (the planner's)
  const int run = static_cast<int>(threadIdx.x) % runs;
  const int first_row = static_cast<int>(threadIdx.x) / runs;
  const int step = kThreads / runs;
  const int64_t rows = args.channel_len;
  const auto tile_rows = static_cast<int>(args.tile_rows);
  const int my_rows = static_cast<int>(min(args.tile_rows, rows - static_cast<int64_t>(rank) * args.tile_rows));
  const auto held_rows = static_cast<int>(args.tile_rows - args.register_len);  // in shared memory, a CTA
  const int my_held = min(my_rows, held_rows);
  const int piece_rows = (held_rows + kPieces - 1) / kPieces;
  const int pieces = (my_held + piece_rows - 1) / piece_rows;
  const int64_t samples = args.channels_last_divisors.samples;
  const int64_t clusters = gridDim.x / group;
  // The warps' sums a channel after the held rows (plan_internal.h channels_last_smem_bytes).
  auto* const warp_sums = reinterpret_cast<typename Sums::Sum*>(smem + static_cast<int64_t>(held_rows) * row_bytes);
  const auto rows_of = [&](int p) { return min(piece_rows, my_held - p * piece_rows); };
  // This CTA's first row of `sample`, of the batch's rows.
  const auto first_row_of = [&](int64_t sample) { return sample * rows + static_cast<int64_t>(rank) * tile_rows; };
  // Thread 0: piece p of `sample`'s x into shared memory.
  const auto issue = [&](int64_t sample, int p) {
    const auto bytes = static_cast<uint32_t>(rows_of(p) * row_bytes);
    const int64_t row = first_row_of(sample) + static_cast<int64_t>(p) * piece_rows;
    arrive_expecting(&shared.landed[p], bytes);
    bulk_copy_to_shared(smem + static_cast<int64_t>(p) * piece_rows * row_bytes,
                        static_cast<const unsigned char*>(args.x) + row * row_bytes, bytes, &shared.landed[p], false);
  };
  // f(r, x, dy) for this thread's rows r of piece p: its run of x (held) and, the backward's, of dy
  // (`dy`: the CTA's first row of the sample, at the thread's run), kBatch rows' dy loaded before
  // the first f.
  const auto for_rows = [&](int p, const T* dy, auto&& f) {
    const int end = p * piece_rows + rows_of(p);
    // One 16-byte shared load (read through a Pack reference, nvcc loaded float32 a word at a time
    // and the 16-bit types a byte at a time: 2.07x a copy on cl-bf16's forward, H100).
    const auto x_at = [&](int r) { return load_pack(reinterpret_cast<const T*>(smem + r * row_bytes + run * 16)); };
    if constexpr (kInputs == 2) {
      for (int first = p * piece_rows + first_row; first < end; first += kBatch * step) {
        Pack<T> g[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int r = first + b * step;
          if (r < end) g[b] = load_pack(dy + static_cast<int64_t>(r) * channels);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int r = first + b * step;
          if (r < end) f(r, x_at(r), g[b]);
        }
      }
    } else {
#pragma unroll 4
      for (int r = p * piece_rows + first_row; r < end; r += step) f(r, x_at(r), Pack<T>{});
    }
  };
  // The register part (the forward's): this thread's rows my_held + first_row + k * step, past those
  // in shared memory.
  Pack<T> part[kRegisterRuns];
  const auto part_row = [&](int k) {
    const int r = my_held + first_row + k * step;
    return kShape.register_runs > 0 && r < my_rows ? r : -1;
  };
  const auto load_part = [&](int64_t sample) {
    if (sample >= samples) return;
    const T* const x = static_cast<const T*>(args.x) + first_row_of(sample) * channels + run * kVec;
#pragma unroll
    for (int k = 0; k < kRegisterRuns; ++k) {
      if (part_row(k) >= 0) part[k] = load_pack(x + static_cast<int64_t>(part_row(k)) * channels);
    }
  };
  const auto context_of = [&](int64_t sample) {
    return sample < samples ? Op::template context<true>(args, sample * channels + threadIdx.x) : typename Op::Context{};
  };
  const bool holds_channel = static_cast<int>(threadIdx.x) < channels;
  const typename Op::Epilogue epilogue = Op::Epilogue::of(args);
  if (threadIdx.x == 0) {
    for (int p = 0; p < kPieces; ++p) cuda::ptx::mbarrier_init(&shared.landed[p], 1);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barriers
  }
  __syncthreads();
  int64_t sample = blockIdx.x / group;
  // Clusters started together would sum, exchange and write in step (config.h
  // kChannelsLastClusterStaggerSpreadCycles).
  stagger_start(args, sample);
  if (threadIdx.x == 0 && sample < samples) {
    for (int p = 0; p < pieces; ++p) issue(sample, p);
  }
  load_part(sample);
  typename Op::Context context{};
  if (holds_channel) context = context_of(sample);
  // The sample's terms around shared.centers, each channel's total over the cluster (in threads
  // c < C) through cell set `set`.
  const auto cluster_totals = [&](int64_t sample, uint32_t parity, int set) {
    float center[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) center[e] = shared.centers[run * kVec + e];
    const T* const dy = kInputs == 2 ? static_cast<const T*>(args.dy) + first_row_of(sample) * channels + run * kVec
                                     : nullptr;
    typename Sums::Sum terms[kVec] = {};
    const auto add = [&](const Pack<T>& x, const Pack<T>& g) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) Sums::add(terms[e], pack_element<T>(x, e), center[e], pack_element<T>(g, e));
    };
    for (int p = 0; p < pieces; ++p) {
      wait_phase(&shared.landed[p], parity);
      for_rows(p, dy, [&](int, const Pack<T>& x, const Pack<T>& g) { add(x, g); });
    }
#pragma unroll
    for (int k = 0; k < kRegisterRuns; ++k) {
      if (part_row(k) >= 0) add(part[k], Pack<T>{});
    }
    leave_warp_sums(terms, warp_sums, runs, channels);
    __syncthreads();
    typename Sums::Total total{};
    if (holds_channel) {
      shared.cells[set][threadIdx.x] =
          warp_sums_total<typename Sums::Total>(warp_sums, kWarps, channels, threadIdx.x);
    }
    cluster.sync();  // every CTA's cells are written (and the warps' cells free)
    if (holds_channel) {
      // The cluster's sums in rank order, four peers' loads in flight.
      constexpr int kInFlight = 4;
      for (int first = 0; first < group; first += kInFlight) {
        typename Sums::Total cell[kInFlight];
#pragma unroll
        for (int q = 0; q < kInFlight; ++q) {
          if (first + q < group) cell[q] = *cluster.map_shared_rank(&shared.cells[set][threadIdx.x], first + q);
        }
#pragma unroll
        for (int q = 0; q < kInFlight; ++q) {
          if (first + q < group) total = total + cell[q];
        }
      }
    }
    return total;
  };
  for (uint32_t parity = 0; sample < samples; parity ^= 1u, sample += clusters) {
    if (holds_channel) shared.centers[threadIdx.x] = Sums::center(context);
    __syncthreads();
    const auto total = cluster_totals(sample, parity, static_cast<int>(parity));
    const int64_t slice = sample * channels + threadIdx.x;
    if constexpr (kInputs == 2) {
      if (holds_channel) {
        const typename Op::SplitPartial sums{total.first, total.second, total.third, 0.0};
        shared.coefficients[threadIdx.x] = Op::finish(args, slice, context, Op::from_split(sums), rank == 0);
      }
    } else {
      // The one pass's statistics, and where any channel's may have lost digits (the same in every
      // CTA: the totals are), the deviations from their mean summed again.
      typename Op::Partial partial{};
      bool lost = false;
      if (holds_channel) {
        partial = Op::from_shifted_sums(rows, context.shift, total, &lost, kChannelsLastStreamMaxSquares);
      }
      if (__syncthreads_or(lost)) {
        if (holds_channel) shared.centers[threadIdx.x] = partial.mean;
        __syncthreads();
        const auto deviations = cluster_totals(sample, parity, Sums::kCellSets - 1);
        if (holds_channel) partial = Op::from_deviations(rows, partial.mean, deviations);
      }
      if (holds_channel) {
        shared.coefficients[threadIdx.x] = Op::finish(args, slice, context, Op::combine(&partial, 1), rank == 0);
      }
    }
    if (holds_channel) context = context_of(sample + clusters);  // lands under the elementwise pass
    __syncthreads();
    typename Op::Coefficients c[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) c[e] = shared.coefficients[run * kVec + e];
    T* const out = static_cast<T*>(args.out) + first_row_of(sample) * channels + run * kVec;
    const T* const dy = kInputs == 2 ? static_cast<const T*>(args.dy) + first_row_of(sample) * channels + run * kVec
                                     : nullptr;
    const auto output = [&](const auto& activation, int r, const Pack<T>& x, const Pack<T>& g) {
      Pack<T> y;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        Acc element[kInputs];
        element[0] = pack_element<T>(x, e);
        if constexpr (kInputs == 2) element[1] = pack_element<T>(g, e);
        y.v[e] = Traits<T>::from_acc(Op::apply(c[e], activation, element));
      }
      store_pack_l2(out + static_cast<int64_t>(r) * channels, y);
    };
    for (int p = 0; p < pieces; ++p) {
      if (args.out != nullptr) {  // (the backward without dx: weight gradients only)
        epilogue.visit([&](const auto& activation) {
          for_rows(p, dy, [&](int r, const Pack<T>& x, const Pack<T>& g) { output(activation, r, x, g); });
        });
      }
      __syncthreads();  // every thread is past piece p
      if (threadIdx.x == 0 && sample + clusters < samples) issue(sample + clusters, p);
    }
    if (kShape.register_runs > 0 && args.out != nullptr) {
      epilogue.visit([&](const auto& activation) {
#pragma unroll
        for (int k = 0; k < kRegisterRuns; ++k) {
          if (part_row(k) >= 0) output(activation, part_row(k), part[k], Pack<T>{});
        }
      });
    }
    load_part(sample + clusters);
  }
  cluster.sync();  // no CTA leaves while a peer may read its cells
}

// The plan's TileLoad (the file's head says which is which).
TileLoad tile_load_of(const Plan& plan) {
  if (channels_last_whole_rows(plan)) return TileLoad::kBulk;
  return plan.vector_io ? TileLoad::kVector : TileLoad::kScalar;
}

// The cluster form's kernel of the plan's op, for element type T (launchers.h
// channels_last_cluster_kernel_of; channels_last.cu launches it).
template <typename T>
KernelFn channels_last_cluster_kernel_typed(const Plan& plan) {
  KernelFn kernel = nullptr;
  dispatch_op_of<T, /*kGroupNorm=*/true>(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    if constexpr (kStreamsReduction<Op>) kernel = &channels_last_cluster_kernel<Op>;
    return Status::Ok();
  });
  return kernel;
}

// The launch of a plan launch_channels_last has checked, for element type T (launchers.h
// launch_channels_last_of; the cluster form's: channels_last.cu).
template <typename T>
Status launch_channels_last_typed(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_op_of<T, /*kGroupNorm=*/true>(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    if (channels_last_resident(plan)) {
      const bool wide = plan.threads > kChannelsLastThreads;
      const auto kernel =
          channels_last_whole_rows(plan)
              ? (wide ? &channels_last_resident_kernel<Op, kChannelsLastResidentWideThreads, TileLoad::kBulk>
                      : &channels_last_resident_kernel<Op, kChannelsLastThreads, TileLoad::kBulk>)
              : (wide ? &channels_last_resident_kernel<Op, kChannelsLastResidentWideThreads, TileLoad::kVector>
                      : &channels_last_resident_kernel<Op, kChannelsLastThreads, TileLoad::kVector>);
      Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      if (!status.ok()) return status;
      const auto threads = static_cast<unsigned>(plan.threads);
      const auto smem = static_cast<std::size_t>(plan.smem_bytes);
      if (!channels_last_exchanges(plan)) {  // CTAs alone: none waits for another
        return launch_dependent("channels_last resident launch", kernel, static_cast<unsigned>(plan.grid), threads,
                                smem, stream, args);
      }
      status = cuda_status(cudaMemsetAsync(args.slice_arrivals, 0,
                                           static_cast<std::size_t>(channels_last_resident_items(plan)) * sizeof(unsigned),
                                           stream),
                           "cudaMemsetAsync(arrivals)");
      if (!status.ok()) return status;
      // A group's CTAs wait for each other.
      return launch_co_resident("channels_last resident launch", kernel, static_cast<unsigned>(plan.grid), threads,
                                smem, stream, args);
    }
    const auto launch = [&](auto load_tag) -> Status {
      constexpr TileLoad kLoad = decltype(load_tag)::value;
      const auto threads = static_cast<unsigned>(plan.threads);
      const auto smem = static_cast<std::size_t>(plan.smem_bytes);
      // Only the bulk path stages the elementwise pass's tiles.
      const std::size_t apply_smem = kLoad == TileLoad::kBulk ? smem : 0;
      const auto grid = static_cast<unsigned>(plan.grid);
      void (*const apply)(KernelArgs) = &channels_last_apply_kernel<Op, kLoad>;
      Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(apply));
      if (!status.ok()) return status;
      if (channels_last_streams(plan)) {
        if constexpr (kStreamsReduction<Op>) {
          const bool applies = channels_last_stream_applies(plan);
          void (*const reduce)(KernelArgs) =
              applies ? &channels_last_stream_kernel<Op, true> : &channels_last_stream_kernel<Op, false>;
          status = allow_max_dynamic_smem(reinterpret_cast<const void*>(reduce));
          const auto stream_grid = static_cast<unsigned>(plan.stream_grid);
          const auto stream_smem = static_cast<std::size_t>(channels_last_stream_smem_bytes(plan));
          if (status.ok() && applies) {  // the one kernel; a part's CTA waits for its sample's others
            status = cuda_status(cudaMemsetAsync(args.slice_arrivals, 0,
                                                 static_cast<std::size_t>(batch_of(plan)) * sizeof(unsigned), stream),
                                 "cudaMemsetAsync(arrivals)");
            if (!status.ok()) return status;
            return launch_co_resident("channels_last stream launch", reduce, stream_grid, kChannelsLastStreamThreads,
                                      stream_smem, stream, args);
          }
          if (status.ok()) {
            status = launch_dependent("channels_last stream launch", reduce, stream_grid, kChannelsLastStreamThreads,
                                      stream_smem, stream, args);
          }
        } else {
          status = Status(StatusCode::kInvalidArgument,
                          "inorm: the plan streams a reduction its op does not (" + plan.describe() + ")");
        }
      } else {
        void (*const reduce)(KernelArgs) = &channels_last_reduce_kernel<Op, kLoad>;
        status = allow_max_dynamic_smem(reinterpret_cast<const void*>(reduce));
        if (status.ok()) status = launch_dependent("channels_last reduce launch", reduce, grid, threads, smem, stream, args);
      }
      if (!status.ok()) return status;
      const bool warps = plan.slice_channels * channels_last_reduce_parts(plan) <= kChannelsLastFinishWarpParts;
      const int64_t slices_a_cta = finish_slices_a_cta(warps ? 32 : kChannelsLastFinishThreads);
      const auto finish_grid = static_cast<unsigned>(
          std::min<int64_t>((plan.num_slices + slices_a_cta - 1) / slices_a_cta, kChannelsLastFinishGrid));
      status = launch_dependent("channels_last finish launch",
                                warps ? &channels_last_finish_kernel<Op, 32>
                                      : &channels_last_finish_kernel<Op, kChannelsLastFinishThreads>,
                                finish_grid, kChannelsLastFinishThreads, 0, stream, args);
      if (!status.ok() || args.out == nullptr) return status;  // the backward without dx: weight gradients only
      return launch_dependent("channels_last apply launch", apply, grid, threads, apply_smem, stream, args);
    };
    switch (tile_load_of(plan)) {
      case TileLoad::kBulk: return launch(std::integral_constant<TileLoad, TileLoad::kBulk>{});
      case TileLoad::kVector: return launch(std::integral_constant<TileLoad, TileLoad::kVector>{});
      case TileLoad::kScalar: break;
    }
    return launch(std::integral_constant<TileLoad, TileLoad::kScalar>{});
  });
}

}  // namespace
}  // namespace inorm::detail
