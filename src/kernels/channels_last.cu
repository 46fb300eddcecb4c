// channels_last tensors (NHWC / NDHWC), where a slice's elements are C apart. A template over the
// op (kernels/forward_op.cuh, kernels/backward_op.cuh), in three kernels over tiles of
// [tile_rows spatial positions x channel_block channels]:
//   reduce  each tile reduces every channel's column with the op's reduce (the threads of a column
//           sum through shared memory in a fixed order) and writes one float64 partial per
//           (slice, tile);
//   finish  a CTA per slice combines its tiles' partials (the op's combine_split, as the split
//           path does) and keeps the slice's elementwise coefficients in the workspace;
//   apply   each tile again: every output element from its inputs and its channel's coefficients.
// The inputs are read twice, as on the split path; L2 holds a tile between the passes only where
// the tensor is small. A tile's row is a contiguous run of channel_block values and a warp's
// threads take consecutive ones, so the accesses are coalesced for any C.
#include <algorithm>

#include "config.h"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

// Where a thread works in each tile: rows `row`, `row + rows`, ... of channel `column` of the block.
struct TileThread {
  int channel_block;
  int rows;  // rows a pass: blockDim.x / channel_block
  int row;
  int column;
  __device__ explicit TileThread(int block)
      : channel_block(block), rows(static_cast<int>(blockDim.x) / block),
        row(static_cast<int>(threadIdx.x) / block), column(static_cast<int>(threadIdx.x) % block) {}
};

// One item of the kernels' grid-stride loop: (sample, channel block, tile), and this thread's slice
// (its channel; channel 0 of the sample where the block's last columns are past C).
struct TileItem {
  int64_t sample;
  int64_t channel;
  bool active;  // channel < C
  int64_t begin;     // the tile's first row
  int64_t rows;      // rows in the tile
  int64_t tile;
  int64_t slice;
  int64_t own_rows;  // this thread's rows in the tile
  int64_t offset;    // its first element
};
__device__ __forceinline__ TileItem tile_item(const KernelArgs& args, const TileThread& t, int64_t item,
                                              int64_t blocks) {
  const int64_t tiles = args.parts_per_slice;
  TileItem it;
  it.tile = item % tiles;
  it.sample = item / tiles / blocks;
  it.channel = (item / tiles % blocks) * t.channel_block + t.column;
  it.active = it.channel < args.channels;
  it.begin = it.tile * args.tile_rows;
  it.rows = min(args.tile_rows, args.slice_len - it.begin);
  it.slice = it.sample * args.channels + (it.active ? it.channel : 0);
  it.own_rows = it.active && t.row < it.rows ? (it.rows - t.row + t.rows - 1) / t.rows : 0;
  it.offset = (it.sample * args.slice_len + it.begin + t.row) * args.channels + it.channel;
  return it;
}

// Rows a thread loads before it uses any (32 bytes of each input): a column's elements are C apart,
// so each load is one element, and only many in flight keep the memory busy.
template <typename T>
inline constexpr int kRowBatch = 64 / static_cast<int>(sizeof(T));

// Loads kRows rows of a thread's column from every input (`step` elements apart), through the
// read-only cache where the kernel writes none of the inputs.
template <int kRows, bool kReadOnly, typename T, int kInputs>
__device__ __forceinline__ void load_rows(const T* const (&inputs)[kInputs], int64_t at, int64_t step,
                                          AccOf<T> (&v)[kRows][kInputs]) {
#pragma unroll
  for (int b = 0; b < kRows; ++b) {
#pragma unroll
    for (int i = 0; i < kInputs; ++i) {
      const T* p = inputs[i] + at + b * step;
      v[b][i] = Traits<T>::to_acc(kReadOnly ? __ldg(p) : *p);
    }
  }
}

// A thread's elements of one tile, for the op's reduce: its rows of its channel, in every input.
template <typename T, int kInputs>
struct ColumnElements {
  using Acc = AccOf<T>;
  const T* inputs[kInputs];
  int64_t step;   // rows a pass * C
  int64_t count;  // the thread's rows
  template <typename F>
  __device__ __forceinline__ void for_each(F&& f) const {
    constexpr int kBatch = kRowBatch<T>;
    int64_t k = 0;
    for (; k + kBatch <= count; k += kBatch) {
      Acc v[kBatch][kInputs];
      load_rows<kBatch, true>(inputs, k * step, step, v);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) f(v[b]);
    }
    for (; k < count; ++k) {
      Acc v[1][kInputs];
      load_rows<1, true>(inputs, k * step, step, v);
      f(v[0]);
    }
  }
};

// The op's all_sum over a column (one channel of the tile): a tree over the rows in a fixed order,
// so the sums are the same bits every run; every thread of the column gets its column's sum. Every
// thread of the CTA calls it (it synchronizes the CTA).
struct ColumnSum {
  unsigned char* scratch;  // kChannelsLastThreads cells of up to kCellBytes
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
};

// Items of the grid-stride loop: samples x channel blocks x tiles.
__device__ __forceinline__ int64_t channels_last_items(const KernelArgs& args, int64_t* blocks) {
  *blocks = (args.channels + args.channel_block - 1) / args.channel_block;
  return args.num_slices / args.channels * *blocks * args.parts_per_slice;
}

template <typename Op>
__global__ void __launch_bounds__(kChannelsLastThreads) channels_last_reduce_kernel(const KernelArgs args) {
  using T = typename Op::Elem;
  __shared__ alignas(16) unsigned char scratch[kChannelsLastThreads * ColumnSum::kCellBytes];
  const TileThread t(args.channel_block);
  const ColumnSum all_sum{scratch, t};
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  auto* partials = static_cast<typename Op::SplitPartial*>(args.split_partials);
  int64_t blocks = 0;
  const int64_t items = channels_last_items(args, &blocks);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const TileItem it = tile_item(args, t, item, blocks);
    ColumnElements<T, Op::kInputs> elements;
#pragma unroll
    for (int i = 0; i < Op::kInputs; ++i) elements.inputs[i] = inputs[i] + it.offset;
    elements.step = static_cast<int64_t>(t.rows) * args.channels;
    elements.count = it.own_rows;
    const typename Op::Context ctx = Op::context(args, it.slice);
    const typename Op::Partial part = Op::reduce(ctx, elements, it.rows, all_sum);
    if (it.active && t.row == 0) partials[it.slice * args.parts_per_slice + it.tile] = Op::to_split(part);
  }
}

template <typename Op>
__global__ void __launch_bounds__(kChannelsLastFinishThreads) channels_last_finish_kernel(const KernelArgs args) {
  using Coefficients = typename Op::Coefficients;
  static_assert(sizeof(Coefficients) <= kSliceCoefficientBytes, "the workspace holds a slice's coefficients");
  const auto* partials = static_cast<const typename Op::SplitPartial*>(args.split_partials);
  auto* coefficients = static_cast<unsigned char*>(args.slice_coefficients);
  for (int64_t slice = blockIdx.x; slice < args.num_slices; slice += gridDim.x) {
    const typename Op::SplitPartial stats = Op::template combine_split<kChannelsLastFinishThreads>(
        partials + slice * args.parts_per_slice, args.parts_per_slice);
    if (threadIdx.x == 0) {
      const Coefficients c = Op::finish(args, slice, Op::context(args, slice), Op::from_split(stats), true);
      *reinterpret_cast<Coefficients*>(coefficients + slice * kSliceCoefficientBytes) = c;
    }
    __syncthreads();  // combine_split's shared memory is used again for the next slice
  }
}

template <typename Op>
__global__ void __launch_bounds__(kChannelsLastThreads) channels_last_apply_kernel(const KernelArgs args) {
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  using Coefficients = typename Op::Coefficients;
  const TileThread t(args.channel_block);
  const T* const inputs[2] = {static_cast<const T*>(args.x), static_cast<const T*>(args.dy)};
  T* const out = static_cast<T*>(args.out);
  const auto* coefficients = static_cast<const unsigned char*>(args.slice_coefficients);
  const int64_t step = static_cast<int64_t>(t.rows) * args.channels;
  int64_t blocks = 0;
  const int64_t items = channels_last_items(args, &blocks);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const TileItem it = tile_item(args, t, item, blocks);
    if (it.own_rows == 0) continue;
    // Written by the finish kernel, earlier on the stream.
    const Coefficients c = *reinterpret_cast<const Coefficients*>(coefficients + it.slice * kSliceCoefficientBytes);
    const T* const at[2] = {inputs[0] + it.offset, inputs[1] + it.offset};
    const T* const (&from)[Op::kInputs] = reinterpret_cast<const T* const (&)[Op::kInputs]>(at);
    constexpr int kBatch = kRowBatch<T>;
    int64_t k = 0;
    // A batch is loaded before any of it is stored: out may be an input (each element is its own).
    for (; k + kBatch <= it.own_rows; k += kBatch) {
      Acc v[kBatch][Op::kInputs];
      load_rows<kBatch, false>(from, k * step, step, v);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) out[it.offset + (k + b) * step] = Traits<T>::from_acc(Op::apply(c, v[b]));
    }
    for (; k < it.own_rows; ++k) {
      Acc v[1][Op::kInputs];
      load_rows<1, false>(from, k * step, step, v);
      out[it.offset + k * step] = Traits<T>::from_acc(Op::apply(c, v[0]));
    }
  }
}

}  // namespace

Status launch_channels_last(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  // A plan edited by hand must still tile every slice with whole passes of its threads.
  const int64_t block = plan.channel_block;
  const int64_t rows = block > 0 ? plan.threads / block : 0;
  if (block < 1 || block > kChannelsLastThreads || plan.threads > kChannelsLastThreads || rows < 1 ||
      rows * block != plan.threads || plan.tile_rows < rows || plan.tile_rows % rows != 0 ||
      plan.parts_per_slice < 1 || static_cast<int64_t>(plan.parts_per_slice) * plan.tile_rows < plan.slice_len ||
      static_cast<int64_t>(plan.parts_per_slice - 1) * plan.tile_rows >= plan.slice_len || plan.grid < 1) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan's channels_last tiles (" + plan.describe() + ") are not ones the planner makes");
  }
  return dispatch_op(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    const auto threads = static_cast<unsigned>(plan.threads);
    const auto grid = static_cast<unsigned>(plan.grid);
    channels_last_reduce_kernel<Op><<<grid, threads, 0, stream>>>(args);
    Status status = cuda_status(cudaGetLastError(), "channels_last reduce launch");
    if (!status.ok()) return status;
    const auto finish_grid = static_cast<unsigned>(std::min<int64_t>(plan.num_slices, kChannelsLastFinishGrid));
    channels_last_finish_kernel<Op><<<finish_grid, kChannelsLastFinishThreads, 0, stream>>>(args);
    status = cuda_status(cudaGetLastError(), "channels_last finish launch");
    if (!status.ok() || args.out == nullptr) return status;  // the backward without dx: weight gradients only
    channels_last_apply_kernel<Op><<<grid, threads, 0, stream>>>(args);
    return cuda_status(cudaGetLastError(), "channels_last apply launch");
  });
}

}  // namespace inorm::detail
