// dev scratch (issue 19; dev/VARIANTS.md 100 and 115): channels_last's forward
// with a thread-block cluster a sample, the shape that took NCHW's 1-2 MiB slices to 1.01-1.08x a
// copy (shared_resident: clusters of 8 at two CTAs an SM with register parts), tried on NHWC
// samples of 1-2 MiB. cl-bf16 (64 samples of 64 channels x 128x128 bfloat16) runs 1.63x a copy
// through the library's one-round streamed kernel, which reads x twice from DRAM past the L2. The
// resident form of dev/VARIANTS.md 55 held a sample over CTAs that exchanged through L2 and ran
// 2.0x: the group waited in lockstep (load, reduce, wait, combine, store), and its column reduction
// took about 22 instructions an element (one 2-byte element a thread a row). Here, instead:
//   - a cluster of G CTAs holds a sample, each CTA rows_per_cta whole rows of it: those that fit
//     its share of the SM's shared memory there (bulk copies: x read once from DRAM), the rest in
//     its threads' registers (RegisterPart), at one or two CTAs an SM (session 72 ran one, all in
//     shared memory);
//   - a thread takes a 16-byte run of channels (8 bfloat16, 4 float32) on every row it visits, so
//     its sums stay in registers, reduced by warp shuffles and one pass over the warps;
//   - the forward's statistics by sums: each CTA's sum a channel, summed over the cluster in
//     float64 through distributed shared memory (a cluster barrier), then d = x - that mean
//     (float32) summed and squared the same way, the mean corrected by the sum of d;
//     y = ((x - hi) - lo) * scale + bias as the library's affine (session 72 merged each CTA's
//     mean and M2 by Chan's rule, a chain of float64 divisions a rank);
//   - the tile lands in `pieces` bulk copies, each with its barrier: the statistics start on the
//     first piece, and the next sample's piece p is loaded as soon as every thread has written
//     piece p of this one (pieces = 1: none of that overlap); the register part's next sample is
//     loaded after the CTA's last write;
//   - its skeleton (kStatistics false): the same loads, barriers and stores without the two passes
//     of statistics or the exchange, y = x: the memory schedule's own cost;
//   - a staggered start (Args::stagger_ns): cluster k of K issues its first loads k / K of it late;
//   - the backward the same way (x and dy of a 2 MiB sample do not fit a cluster): x held, dy read
//     twice from global memory, its second read a cluster's sample read microseconds before, in L2
//     if the L2 keeps it (the clusters' samples in flight are 14-16 MiB of the H200's 60).
// Checked against a float64 reference on three samples (y and the saved mean and rstd; dx and the
// weight gradient's sums) and for NaN over the whole output (poisoned before each checked run);
// timed against cudaMemcpyAsync of the same tensor (the backward's floor 1.5 copies), CUDA events (each
// sample queued behind a 50 us hold of the GPU), median of 25 after 3 warm-ups. The library's
// number is inorm-bench's on the same shapes in the same device call
// (bench/results/2026-12-05-h200-cl-cluster/call.sh; session 87's: 2026-12-06-h100-cl-cluster-two/).
// Not library code: built by CI so it keeps compiling (target inorm-dev-cl-cluster), run by hand
// on a GPU: inorm-dev-cl-cluster.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda/ptx>
#include <functional>
#include <string>
#include <vector>

#include "check_cuda.h"
#include "cl_probe_common.cuh"

namespace cg = cooperative_groups;

constexpr int kMaxChannels = 128;  // C of a sample: at most 32 runs of 16 bytes a row (a warp's lanes)


struct Args {
  const void* x;
  void* y;              // forward
  const void* dy;       // backward
  void* dx;             // backward
  const float* weight;  // [C]
  const float* bias;    // [C]
  float* mean;          // [N * C]: the forward's output where not null, the backward's input
  float* rstd;          // [N * C], as mean
  float* sum_dy;        // [N * C]: the backward's per-sample sums for dbias, where not null
  float* sum_dy_xhat;   // [N * C]: and for dweight
  int64_t samples;
  int64_t rows;      // spatial positions a sample
  int channels;      // C
  int group;         // CTAs a sample: the cluster
  int rows_per_cta;  // every rank's but the last, which takes the rest
  int held_rows;     // of a CTA's rows, those in shared memory; the rest in its threads' registers
  int piece_rows;    // rows a bulk copy
  float eps;
  uint32_t stagger_ns;  // cluster k of K starts its first loads k * stagger_ns / K late
};

__device__ __forceinline__ void wait_parity(uint64_t* bar, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Sums of a thread's run, per channel of it, over the CTA, of K quantities (K = 1 or 2): lanes of
// one run are `runs` apart in a warp (runs divides 32), then one pass over the warps by a thread a
// channel. Every thread calls it; threads c < C get channel c's totals (.y 0 where K = 1).
template <int kVec, int kWarps, int K>
__device__ __forceinline__ float2 cta_channel_sums(float (&v)[K][kVec], int runs, int channels,
                                                   float2 (*red)[kMaxChannels]) {
  for (int offset = runs; offset < 32; offset *= 2) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[k][e] += __shfl_xor_sync(0xffffffffu, v[k][e], offset);
    }
  }
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (lane < runs) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) red[warp][lane * kVec + e] = make_float2(v[0][e], K > 1 ? v[K - 1][e] : 0.f);
  }
  __syncthreads();
  float2 total = make_float2(0.f, 0.f);
  if (static_cast<int>(threadIdx.x) < channels) {
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      total.x += red[w][threadIdx.x].x;
      total.y += red[w][threadIdx.x].y;
    }
  }
  __syncthreads();  // red is free for the next sum
  return total;
}

// Rows of rank `rank` of a cluster: rows_per_cta, the last rank the rest.
__device__ __forceinline__ int rows_of_rank(const Args& a, int rank) {
  return static_cast<int>(
      min(static_cast<int64_t>(a.rows_per_cta), a.rows - static_cast<int64_t>(rank) * a.rows_per_cta));
}

// A CTA's share of a sample: its first `held` rows in shared memory (x: every pass's tile), in
// pieces with a bulk copy and a barrier each, the rest (the forward's register part) in its threads'
// registers; where a thread works: a 16-byte run of channels (`run`) on rows first_row,
// first_row + step, ... of each piece, and held + first_row + k * step of the register part.
template <typename T, int kThreads>
struct SampleTile {
  const Args& a;
  unsigned char* tile;
  uint64_t* landed;  // a barrier a piece
  int rank, runs, run, step, first_row, my_rows, held, pieces, row_bytes;

  __device__ SampleTile(const Args& args, unsigned char* smem, uint64_t* barriers, int cta_rank)
      : a(args), tile(smem), landed(barriers), rank(cta_rank) {
    runs = a.channels * static_cast<int>(sizeof(T)) / 16;
    run = static_cast<int>(threadIdx.x) % runs;
    step = kThreads / runs;
    first_row = static_cast<int>(threadIdx.x) / runs;
    my_rows = rows_of_rank(a, rank);
    held = min(my_rows, a.held_rows);
    pieces = (held + a.piece_rows - 1) / a.piece_rows;
    row_bytes = a.channels * static_cast<int>(sizeof(T));
  }
  // Byte offset of this CTA's first row of `sample` in a tensor of x's shape, at this thread's run.
  __device__ int64_t offset(int64_t sample) const {
    return (sample * a.rows + static_cast<int64_t>(rank) * a.rows_per_cta) * row_bytes + run * 16;
  }
  __device__ int rows_of(int p) const { return min(a.piece_rows, held - p * a.piece_rows); }
  // Thread 0: piece p of `sample`'s x into the tile.
  __device__ void issue(int64_t sample, int p) const {
    const uint32_t bytes = static_cast<uint32_t>(rows_of(p)) * row_bytes;
    const int64_t row =
        sample * a.rows + static_cast<int64_t>(rank) * a.rows_per_cta + static_cast<int64_t>(p) * a.piece_rows;
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &landed[p], bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global,
                             tile + static_cast<int64_t>(p) * a.piece_rows * row_bytes,
                             static_cast<const unsigned char*>(a.x) + row * row_bytes, bytes, &landed[p]);
  }
  __device__ void issue_all(int64_t sample) const {
    if (threadIdx.x == 0 && sample < a.samples) {
      for (int p = 0; p < pieces; ++p) issue(sample, p);
    }
  }
  // After every thread's last read of piece p (a barrier): the next sample's piece p.
  __device__ void refill(int64_t next, int p) const {
    __syncthreads();
    if (threadIdx.x == 0 && next < a.samples) issue(next, p);
  }
  __device__ uint4 x_run(int r) const {
    return *reinterpret_cast<const uint4*>(tile + static_cast<int64_t>(r) * row_bytes + run * 16);
  }
  // f(r, x) for this thread's rows r of piece p, x its run of the row as read from the tile.
  template <typename F>
  __device__ void for_rows(int p, F&& f) const {
    const int end = p * a.piece_rows + rows_of(p);
#pragma unroll 4  // four 16-byte shared loads in flight a thread
    for (int r = p * a.piece_rows + first_row; r < end; r += step) f(r, x_run(r));
  }
  // f(r, x, g) likewise, g the run of the same row of `other` (global memory, from offset()),
  // kBatch rows' runs loaded before the first f: 16 * kBatch bytes in flight a thread.
  template <int kBatch, typename F>
  __device__ void for_rows_with(int p, const unsigned char* other, F&& f) const {
    const int end = p * a.piece_rows + rows_of(p);
    for (int first = p * a.piece_rows + first_row; first < end; first += kBatch * step) {
      uint4 g[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int r = first + b * step;
        if (r < end) g[b] = *reinterpret_cast<const uint4*>(other + static_cast<int64_t>(r) * row_bytes);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int r = first + b * step;
        if (r < end) f(r, x_run(r), g[b]);
      }
    }
  }
};

// A CTA's rows past its shared memory: this thread's held + first_row + k * step, k < kRegVecs,
// as loaded (16-byte runs of x).
template <typename T, int kThreads, int kRegVecs>
struct RegisterPart {
  static constexpr int kVecs = kRegVecs > 0 ? kRegVecs : 1;
  uint4 v[kVecs];
  // Row k of this thread's part, or -1 past the CTA's rows.
  __device__ static int row(const SampleTile<T, kThreads>& t, int k) {
    const int r = t.held + t.first_row + k * t.step;
    return kRegVecs > 0 && r < t.my_rows ? r : -1;
  }
  __device__ void load(const SampleTile<T, kThreads>& t, int64_t sample) {
    if (sample >= t.a.samples) return;
    const unsigned char* const in = static_cast<const unsigned char*>(t.a.x) + t.offset(sample);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int r = row(t, k);
      if (r >= 0) v[k] = *reinterpret_cast<const uint4*>(in + static_cast<int64_t>(r) * t.row_bytes);
    }
  }
  // f(r, x) for each row r of the part.
  template <typename F>
  __device__ void for_rows(const SampleTile<T, kThreads>& t, F&& f) const {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int r = row(t, k);
      if (r >= 0) f(r, v[k]);
    }
  }
  // f(r, x, g) likewise, g the run of row r of `other` (global memory, from t.offset()), loaded
  // kBatch rows at a time.
  template <typename F>
  __device__ void for_rows_with(const SampleTile<T, kThreads>& t, const unsigned char* other, F&& f) const {
    constexpr int kBatch = 4;
#pragma unroll
    for (int first = 0; first < kVecs; first += kBatch) {
      uint4 g[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int r = first + b < kVecs ? row(t, first + b) : -1;
        if (r >= 0) g[b] = *reinterpret_cast<const uint4*>(other + static_cast<int64_t>(r) * t.row_bytes);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int r = first + b < kVecs ? row(t, first + b) : -1;
        if (r >= 0) f(r, v[first + b], g[b]);
      }
    }
  }
};

// The barriers' init by thread 0, seen by the copy engine; the CTA synchronizes after it.
template <int kPieces>
__device__ __forceinline__ void init_landed(uint64_t (&landed)[kPieces]) {
  if (threadIdx.x == 0) {
    for (int p = 0; p < kPieces; ++p) cuda::ptx::mbarrier_init(&landed[p], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
}

// Sums `local` (this CTA's, threads c < C) over the cluster in rank order, in float64: each CTA's
// cell through distributed shared memory at one cluster barrier, four peers' loads in flight at
// once. The callers alternate two cell arrays, so that a CTA writes one again only after another
// cluster barrier, which no peer passes before it has read them.
__device__ __forceinline__ double2 cluster_channel_sums(const cg::cluster_group& cluster, float2 local, int group,
                                                       int channels, float2* cells) {
  const int c = static_cast<int>(threadIdx.x);
  if (c < channels) cells[c] = local;
  cluster.sync();
  double2 total = make_double2(0.0, 0.0);
  if (c < channels) {
    constexpr int kInFlight = 4;
    for (int first = 0; first < group; first += kInFlight) {
      float2 cell[kInFlight];
#pragma unroll
      for (int q = 0; q < kInFlight; ++q) {
        if (first + q < group) cell[q] = *cluster.map_shared_rank(&cells[c], first + q);
      }
#pragma unroll
      for (int q = 0; q < kInFlight; ++q) {
        if (first + q < group) {
          total.x += cell[q].x;
          total.y += cell[q].y;
        }
      }
    }
  }
  return total;
}

// Threads spin until `ns` of the global timer have passed.
__device__ __forceinline__ void wait_ns(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(256);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// The forward at kCtasPerSm CTAs an SM: a CTA's rows past its shared memory (held_rows) in its
// threads' registers (kRegVecs 16-byte runs a thread at most), loaded with the sample's bulk copies
// and refilled after the CTA's writes. Statistics by sums alone: the sample's sum a channel (first
// exchange), then d = x - that mean (in float32) summed and squared (second exchange); the mean
// corrected by the sum of d, as the library's Partial (kernels/forward_op.cuh). No division in the
// merge (the Chan merge of session 72's probe, a chain of float64 divisions a rank, ran the
// forward at 3.4-4.1x where its skeleton ran 1.6).
template <typename T, int kThreads, int kCtasPerSm, int kPieces, int kRegVecs, bool kStatistics = true>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) cluster_forward(const __grid_constant__ Args a) {
  using R = Run<T>;
  constexpr int kVec = R::kVec;
  constexpr int kWarps = kThreads / 32;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t landed[kPieces];
  __shared__ float2 sum_cells[kMaxChannels];    // this CTA's sum of x a channel (.y unused)
  __shared__ float2 d_cells[kMaxChannels];      // this CTA's sums of d and d^2 a channel
  __shared__ float4 coefficients[kMaxChannels];  // (center hi, center lo, scale, bias); first the mean in .x
  __shared__ float2 red[kWarps][kMaxChannels];
  cg::cluster_group cluster = cg::this_cluster();
  init_landed(landed);
  const SampleTile<T, kThreads> t(a, smem, landed, static_cast<int>(cluster.block_rank()));
  const int run = t.run;
  const int c = static_cast<int>(threadIdx.x);
  RegisterPart<T, kThreads, kRegVecs> part;
  // f(r, x) over this thread's rows of the whole share: the pieces (waiting on each where `wait`),
  // then the register part.
  const auto for_all_rows = [&](uint32_t parity, bool wait, auto&& f) {
    for (int p = 0; p < t.pieces; ++p) {
      if (wait) wait_parity(&landed[p], parity);
      t.for_rows(p, f);
    }
    part.for_rows(t, f);
  };
  const auto statistics = [&](int64_t sample, uint32_t parity) {
    float sum[1][kVec] = {};
    for_all_rows(parity, true, [&](int, const uint4& u) {
      float f[kVec];
      R::unpack(u, f);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum[0][e] += f[e];
    });
    const float2 local_sum = cta_channel_sums<kVec, kWarps>(sum, t.runs, a.channels, red);
    const double n = static_cast<double>(a.rows);
    const double2 total = cluster_channel_sums(cluster, local_sum, a.group, a.channels, sum_cells);
    if (c < a.channels) coefficients[c].x = static_cast<float>(total.x / n);
    __syncthreads();
    float shift[kVec], d_sums[2][kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      shift[e] = coefficients[run * kVec + e].x;
      d_sums[0][e] = 0.f;
      d_sums[1][e] = 0.f;
    }
    for_all_rows(parity, false, [&](int, const uint4& u) {
      float f[kVec];
      R::unpack(u, f);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float d = f[e] - shift[e];
        d_sums[0][e] += d;
        d_sums[1][e] = fmaf(d, d, d_sums[1][e]);
      }
    });
    const float2 local = cta_channel_sums<kVec, kWarps>(d_sums, t.runs, a.channels, red);
    const double2 d_total = cluster_channel_sums(cluster, local, a.group, a.channels, d_cells);
    if (c < a.channels) {
      const double d_mean = d_total.x / n;
      const double mean = coefficients[c].x + d_mean;
      const double variance = fmax(d_total.y / n - d_mean * d_mean, 0.0);
      // The library's affine: ((x - hi) - lo) * scale + bias, the mean in two floats (kernels/common.cuh).
      const float hi = static_cast<float>(mean);
      const float rstd = static_cast<float>(1.0 / ::sqrt(variance + a.eps));
      coefficients[c] = make_float4(hi, static_cast<float>(mean - hi), rstd * a.weight[c], a.bias[c]);
      if (t.rank == 0 && a.mean != nullptr) {  // saved for the backward
        a.mean[sample * a.channels + c] = hi;
        a.rstd[sample * a.channels + c] = rstd;
      }
    }
  };
  const int64_t clusters = gridDim.x / a.group;
  int64_t sample = blockIdx.x / a.group;
  if (a.stagger_ns != 0) wait_ns(static_cast<uint64_t>(a.stagger_ns) * sample / clusters);
  t.issue_all(sample);
  part.load(t, sample);
  // Every CTA of the cluster takes the same samples (a sample a cluster, strided).
  for (uint32_t parity = 0; sample < a.samples; parity ^= 1u, sample += clusters) {
    if constexpr (kStatistics) {
      statistics(sample, parity);
    } else {
      for (int p = 0; p < t.pieces; ++p) wait_parity(&landed[p], parity);
      if (c < a.channels) coefficients[c] = make_float4(0.f, 0.f, 1.f, 0.f);
      cluster.sync();
    }
    __syncthreads();
    float4 coefficient[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) coefficient[e] = coefficients[run * kVec + e];
    unsigned char* const out = static_cast<unsigned char*>(a.y) + t.offset(sample);
    const auto write = [&](int r, const uint4& u) {
      float f[kVec];
      R::unpack(u, f);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float4& k = coefficient[e];
        f[e] = fmaf((f[e] - k.x) - k.y, k.z, k.w);
      }
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(r) * t.row_bytes) = R::pack(f);
    };
    for (int p = 0; p < t.pieces; ++p) {
      t.for_rows(p, write);
      t.refill(sample + clusters, p);
    }
    part.for_rows(t, write);
    part.load(t, sample + clusters);
  }
  cluster.sync();  // no CTA leaves while another may read its cells
}

// The backward (train mode, the affine's weight, no activation): x held in the tile and the
// register part as the forward's, dy read from global memory twice (its second read, a cluster's
// 1-2 MiB a sample read some microseconds before, likely from L2): the sums of dy and
// dy * (x - mean) a channel over the sample, through the cluster as the forward's; then
// dx = rstd * w * (dy - S1 / n - (x - mean) * rstd^2 * S2 / n).
template <typename T, int kThreads, int kCtasPerSm, int kPieces, int kRegVecs>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) cluster_backward(const __grid_constant__ Args a) {
  using R = Run<T>;
  constexpr int kVec = R::kVec;
  constexpr int kWarps = kThreads / 32;
  constexpr int kBatch = kCtasPerSm > 1 ? 4 : 8;  // dy's 16-byte runs in flight a thread, as registers allow
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t landed[kPieces];
  __shared__ float2 cells[2][kMaxChannels];  // this CTA's (S1, S2) a channel, by the sample's parity
  // (mean, rstd * w, b, k): dx = rstd * w * dy + b + k * (x - mean); first (mean, rstd, w).
  __shared__ float4 coefficients[kMaxChannels];
  __shared__ float2 red[kWarps][kMaxChannels];
  cg::cluster_group cluster = cg::this_cluster();
  init_landed(landed);
  const SampleTile<T, kThreads> t(a, smem, landed, static_cast<int>(cluster.block_rank()));
  const int run = t.run;
  const int c = static_cast<int>(threadIdx.x);
  RegisterPart<T, kThreads, kRegVecs> part;
  const int64_t clusters = gridDim.x / a.group;
  int64_t sample = blockIdx.x / a.group;
  t.issue_all(sample);
  part.load(t, sample);
  for (uint32_t parity = 0; sample < a.samples; parity ^= 1u, sample += clusters) {
    if (c < a.channels) {
      coefficients[c] = make_float4(a.mean[sample * a.channels + c], a.rstd[sample * a.channels + c], a.weight[c], 0.f);
    }
    __syncthreads();
    float center[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) center[e] = coefficients[run * kVec + e].x;
    const unsigned char* const dy = static_cast<const unsigned char*>(a.dy) + t.offset(sample);
    float sums[2][kVec] = {};
    const auto sum = [&](int, const uint4& xu, const uint4& gu) {
      float xf[kVec], g[kVec];
      R::unpack(xu, xf);
      R::unpack(gu, g);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        sums[0][e] += g[e];
        sums[1][e] = fmaf(g[e], xf[e] - center[e], sums[1][e]);
      }
    };
    for (int p = 0; p < t.pieces; ++p) {
      wait_parity(&landed[p], parity);
      t.template for_rows_with<kBatch>(p, dy, sum);
    }
    part.for_rows_with(t, dy, sum);
    const float2 local = cta_channel_sums<kVec, kWarps>(sums, t.runs, a.channels, red);
    // One exchange a sample: the cells alternate by its parity.
    const double2 total = cluster_channel_sums(cluster, local, a.group, a.channels, cells[parity]);
    if (c < a.channels) {
      const double s1 = total.x, s2 = total.y;
      const float4 k = coefficients[c];
      const double n = static_cast<double>(a.rows);
      const double scale = static_cast<double>(k.y) * k.z;  // rstd * w
      coefficients[c] = make_float4(k.x, static_cast<float>(scale), static_cast<float>(-scale * s1 / n),
                                    static_cast<float>(-scale * k.y * k.y * s2 / n));
      if (t.rank == 0 && a.sum_dy != nullptr) {
        a.sum_dy[sample * a.channels + c] = static_cast<float>(s1);
        a.sum_dy_xhat[sample * a.channels + c] = static_cast<float>(s2 * k.y);
      }
    }
    __syncthreads();
    float4 coefficient[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) coefficient[e] = coefficients[run * kVec + e];
    unsigned char* const out = static_cast<unsigned char*>(a.dx) + t.offset(sample);
    const auto write = [&](int r, const uint4& xu, const uint4& gu) {
      float xf[kVec], g[kVec];
      R::unpack(xu, xf);
      R::unpack(gu, g);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float4& k = coefficient[e];
        g[e] = fmaf(k.y, g[e], fmaf(k.w, xf[e] - k.x, k.z));
      }
      *reinterpret_cast<uint4*>(out + static_cast<int64_t>(r) * t.row_bytes) = R::pack(g);
    };
    for (int p = 0; p < t.pieces; ++p) {
      t.template for_rows_with<kBatch>(p, dy, write);
      t.refill(sample + clusters, p);
    }
    part.for_rows_with(t, dy, write);
    part.load(t, sample + clusters);
  }
  cluster.sync();  // no CTA leaves while another may read its cells
}


struct Shape {
  const char* id;
  int64_t samples, channels, rows;
  bool bf16;
};

// One variant's launch: clusters of `group` CTAs of `threads`, `ctas_per_sm` an SM, each CTA's
// rows in shared memory in `pieces` (the forward: as many as fit, the rest in `reg_vecs` 16-byte
// runs a thread).
struct Variant {
  int threads, pieces, group, ctas_per_sm = 1, reg_vecs = 0;
  bool skeleton = false;
  uint32_t stagger_ns = 0;
};

template <typename T>
int run_shape(const Shape& s, int sms) {
  using R = Run<T>;
  const int64_t n = s.samples * s.rows * s.channels;
  const int64_t slices = s.samples * s.channels;
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const int row_bytes = static_cast<int>(s.channels * sizeof(T));
  T *x = nullptr, *y = nullptr, *dy = nullptr;
  float *weight = nullptr, *bias = nullptr, *mean = nullptr, *rstd = nullptr, *sum_dy = nullptr, *sum_dy_xhat = nullptr;
  unsigned long long* bad = nullptr;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));  // y, and the backward's dx
  CK(cudaMalloc(&dy, bytes));
  CK(cudaMalloc(&weight, s.channels * sizeof(float)));
  CK(cudaMalloc(&bias, s.channels * sizeof(float)));
  for (float** p : {&mean, &rstd, &sum_dy, &sum_dy_xhat}) CK(cudaMalloc(p, slices * sizeof(float)));
  CK(cudaMalloc(&bad, sizeof *bad));
  fill<<<1056, 256>>>(x, s.samples, s.rows, static_cast<int>(s.channels), 12345u, true);
  fill<<<1056, 256>>>(dy, s.samples, s.rows, static_cast<int>(s.channels), 777u, false);
  reference_stats<<<static_cast<unsigned>((slices + 127) / 128), 128>>>(
      x, s.samples, s.rows, static_cast<int>(s.channels), 1e-5f, mean, rstd);
  std::vector<float> w(s.channels), b(s.channels);
  for (int c = 0; c < s.channels; ++c) {
    w[c] = 0.5f + 0.01f * static_cast<float>(c % 97);
    b[c] = -1.f + 0.02f * static_cast<float>(c % 89);
  }
  CK(cudaMemcpy(weight, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(bias, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());
  std::vector<float> saved_mean(slices), saved_rstd(slices);
  CK(cudaMemcpy(saved_mean.data(), mean, slices * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(saved_rstd.data(), rstd, slices * sizeof(float), cudaMemcpyDeviceToHost));

  bool failed = false;
  const auto copy_x = [&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); };
  const double copy = median_ms(copy_x, failed);
  std::printf("%s: %lld x %lld channels x %lld rows %s, %.1f MiB (%.2f MiB a sample); copy %.4f ms\n", s.id,
              static_cast<long long>(s.samples), static_cast<long long>(s.channels), static_cast<long long>(s.rows),
              s.bf16 ? "bf16" : "fp32", bytes / 1048576.0, bytes / 1048576.0 / s.samples, copy);

  // The float64 reference of samples 0, N/2 and N-1, from the inputs as stored.
  const std::vector<int64_t> checked = {0, s.samples / 2, s.samples - 1};
  const int64_t sample_elems = s.rows * s.channels;
  std::vector<T> hx(sample_elems), hdy(sample_elems), hout(sample_elems);
  // Tolerances: bfloat16 output, half an ulp of rounding (2^-8 relative) and float32 arithmetic on
  // the way; float32 output, float32 arithmetic around offsets of up to 1000.
  const auto tolerance = [&](double ref, double slack) {
    return s.bf16 ? slack * (1e-2 + 4e-3 * std::fabs(ref)) : slack * (1e-4 + 1e-4 * std::fabs(ref));
  };

  // Runs variant v of `kernel` (checked, then timed), `backward` or the forward; prints its row.
  const auto run = [&](auto kernel, const Variant& v, bool backward) -> int {
    const int runs = row_bytes / 16;
    if (row_bytes % 16 != 0 || runs > 32 || 32 % runs != 0 || s.channels > kMaxChannels) return 0;
    // Rows a CTA: whole pieces; the last rank takes the rest. (A piece's rows need not be a multiple
    // of the step: each piece's rows go round the threads from its first.) The forward holds in
    // shared memory what ctas_per_sm CTAs an SM leave it (each reserves 1 KiB, and its static
    // arrays), the rest in registers.
    int piece_rows = static_cast<int>(((s.rows + v.group - 1) / v.group + v.pieces - 1) / v.pieces);
    const int rows_per_cta = piece_rows * v.pieces;
    int held_rows = rows_per_cta;
    {
      int sm_smem = 0, optin = 0;
      CK(cudaDeviceGetAttribute(&sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
      CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
      cudaFuncAttributes attributes{};
      CK(cudaFuncGetAttributes(&attributes, kernel));
      const int room = std::min(optin, sm_smem / v.ctas_per_sm - 1024) - static_cast<int>(attributes.sharedSizeBytes);
      piece_rows = std::min(piece_rows, room / row_bytes / v.pieces);
      held_rows = piece_rows * v.pieces;
    }
    const int smem = held_rows * row_bytes;
    const int register_rows = rows_per_cta - held_rows;
    const int step = v.threads / runs;
    char label[160];
    std::snprintf(label, sizeof label, "%s c%-2d %d/SM %4d threads %d pieces%s %3d KiB + %2d regs a thread%s",
                  backward ? "backward" : "forward ", v.group, v.ctas_per_sm, v.threads, v.pieces,
                  v.skeleton ? " skeleton" : "", smem / 1024, (register_rows + step - 1) / step,
                  v.stagger_ns != 0 ? " stagger" : "");
    if (static_cast<int64_t>(rows_per_cta) * (v.group - 1) >= s.rows) {
      std::printf("  %s: skipped, the last rank would be empty\n", label);
      return 0;
    }
    if (register_rows > v.reg_vecs * step) {
      std::printf("  %s: skipped, %d rows past shared memory, registers for %d\n", label, register_rows,
                  v.reg_vecs * step);
      return 0;
    }
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      cudaGetLastError();
      std::printf("  %s: skipped, more than a CTA's shared memory\n", label);
      return 0;
    }
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = v.group;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    cfg.blockDim = dim3(v.threads);
    cfg.dynamicSmemBytes = smem;
    cfg.gridDim = dim3(v.group);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess || clusters == 0) {
      cudaGetLastError();
      std::printf("  %s: skipped, no cluster fits\n", label);
      return 0;
    }
    clusters = static_cast<int>(std::min<int64_t>(clusters, s.samples));
    cfg.gridDim = dim3(clusters * v.group);
    // The forward writes its own mean and rstd into sum_dy / sum_dy_xhat's buffers, so that the
    // backward's saved statistics (mean, rstd: the float64 reference's) stay as they are.
    Args args{};
    args.x = x;
    args.y = y;
    args.dy = dy;
    args.dx = y;
    args.weight = weight;
    args.bias = bias;
    args.mean = backward ? mean : sum_dy;
    args.rstd = backward ? rstd : sum_dy_xhat;
    args.sum_dy = sum_dy;
    args.sum_dy_xhat = sum_dy_xhat;
    args.samples = s.samples;
    args.rows = s.rows;
    args.channels = static_cast<int>(s.channels);
    args.group = v.group;
    args.rows_per_cta = rows_per_cta;
    args.held_rows = held_rows;
    args.piece_rows = piece_rows;
    args.eps = 1e-5f;
    args.stagger_ns = v.stagger_ns;
    const auto launch = [&] { return cudaLaunchKernelEx(&cfg, kernel, args); };
    // Checked run: poisoned output (NaN), then every element not NaN and three samples against float64.
    CK(cudaMemset(y, 0xff, bytes));
    CK(launch());
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(bad, 0, sizeof *bad));
    count_nan<<<1056, 256>>>(y, n, bad);
    unsigned long long nans = 0;
    CK(cudaMemcpy(&nans, bad, sizeof nans, cudaMemcpyDeviceToHost));
    std::vector<float> sums[2] = {std::vector<float>(slices), std::vector<float>(slices)};
    CK(cudaMemcpy(sums[0].data(), sum_dy, slices * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(sums[1].data(), sum_dy_xhat, slices * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0.0;
    int64_t outside = 0;
    for (const int64_t sample : checked) {
      CK(cudaMemcpy(hx.data(), x + sample * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hdy.data(), dy + sample * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hout.data(), y + sample * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      for (int c = 0; c < s.channels; ++c) {
        const auto xv = [&](int64_t r) { return R::host_value(&hx[r * s.channels + c]); };
        const auto gv = [&](int64_t r) { return R::host_value(&hdy[r * s.channels + c]); };
        const int64_t slice = sample * s.channels + c;
        double m = 0.0, rs = 1.0;  // the skeleton's y = x
        double s1 = 0.0, s2 = 0.0, abs1 = 0.0, abs2 = 0.0;
        if (backward) {  // with the saved statistics, as the kernel
          m = saved_mean[slice];
          rs = saved_rstd[slice];
          for (int64_t r = 0; r < s.rows; ++r) {
            s1 += gv(r);
            s2 += gv(r) * (xv(r) - m);
            abs1 += std::fabs(gv(r));
            abs2 += std::fabs(gv(r) * (xv(r) - m));
          }
          // The weight gradient's per-sample sums, within float32 sums' reach.
          const double e1 = std::fabs(sums[0][slice] - s1), e2 = std::fabs(sums[1][slice] - s2 * rs);
          outside += e1 > 1e-5 * abs1 + 1e-4 || e2 > 1e-5 * abs2 * rs + 1e-4 || std::isnan(e1 + e2);
        } else if (!v.skeleton) {
          double sum = 0.0;
          for (int64_t r = 0; r < s.rows; ++r) sum += xv(r);
          m = sum / s.rows;
          double m2 = 0.0;
          for (int64_t r = 0; r < s.rows; ++r) m2 += (xv(r) - m) * (xv(r) - m);
          rs = 1.0 / std::sqrt(m2 / s.rows + 1e-5);
          // The saved statistics (in sum_dy / sum_dy_xhat's buffers here): float32 of float64 sums.
          const double e1 = std::fabs(sums[0][slice] - m), e2 = std::fabs(sums[1][slice] - rs);
          outside += e1 > 1e-6 * std::fabs(m) + 1e-6 || e2 > 1e-5 * rs || std::isnan(e1 + e2);
        }
        for (int64_t r = 0; r < s.rows; ++r) {
          double ref;
          if (backward) {
            ref = rs * w[c] * (gv(r) - s1 / s.rows - (xv(r) - m) * rs * rs * s2 / s.rows);
          } else {
            ref = v.skeleton ? xv(r) : (xv(r) - m) * rs * w[c] + b[c];
          }
          const double err = std::fabs(R::host_value(&hout[r * s.channels + c]) - ref);
          worst = std::max(worst, err);
          // dx's terms are each up to rstd * w * |dy|, about ten times dx's scale at sigma 0.25.
          outside += err > tolerance(ref, backward ? 4.0 : 1.0) || std::isnan(err);
        }
      }
    }
    const double ms = median_ms(launch, failed);
    const double floor = backward ? 1.5 * copy : copy;
    std::printf("  %s, %2d clusters (%3d CTAs, %d SMs): %.4f ms  %.3fx %s  %s (NaN %llu, outside %lld, worst %.2e)\n",
                label, clusters, clusters * v.group, sms, ms, ms / floor, backward ? "1.5 copies" : "copy",
                nans == 0 && outside == 0 ? "ok" : "WRONG", nans, static_cast<long long>(outside), worst);
    std::fflush(stdout);
    failed = failed || nans != 0 || outside != 0;
    return 0;
  };
  // The forward: session 72's shape (one CTA an SM, all in shared memory) with the merge by sums,
  // then two CTAs an SM with register parts, their skeleton, a staggered start, one piece, 512
  // threads; the backward at one CTA an SM as session 72's, and at two.
  for (const int group : {16, 8}) {
    int errors = run(cluster_forward<T, 256, 1, 4, 0>, {256, 4, group}, false);
    errors += run(cluster_forward<T, 256, 2, 4, 8>, {256, 4, group, 2, 8}, false);
    errors += run(cluster_forward<T, 256, 2, 4, 8, false>, {256, 4, group, 2, 8, true}, false);
    errors += run(cluster_forward<T, 256, 2, 4, 8>, {256, 4, group, 2, 8, false, 4000}, false);
    errors += run(cluster_forward<T, 256, 2, 1, 8>, {256, 1, group, 2, 8}, false);
    errors += run(cluster_forward<T, 512, 2, 4, 4>, {512, 4, group, 2, 4}, false);
    errors += run(cluster_backward<T, 512, 1, 4, 0>, {512, 4, group}, true);
    errors += run(cluster_backward<T, 256, 2, 4, 7>, {256, 4, group, 2, 7}, true);
    failed = failed || errors != 0;
  }
  std::printf("  copy again %.4f ms\n", median_ms(copy_x, failed));
  for (void* p : std::initializer_list<void*>{x, y, dy, weight, bias, mean, rstd, sum_dy, sum_dy_xhat, bad}) {
    CK(cudaFree(p));
  }
  return failed ? 1 : 0;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // layouts.json's cl-bf16 and shapes beside it of 1-2 MiB samples (the rows are H x W).
  const Shape shapes[] = {
      {"cl-bf16 64x64x128x128", 64, 64, 128 * 128, true},
      {"32x64x128x128 bf16", 32, 64, 128 * 128, true},
      {"64x32x256x128 bf16", 64, 32, 256 * 128, true},
      {"128x64x64x128 bf16 (1 MiB samples)", 128, 64, 64 * 128, true},
      {"8x64x128x128 bf16", 8, 64, 128 * 128, true},
      {"64x32x128x128 fp32", 64, 32, 128 * 128, false},
      {"64x64x64x64 fp32 (1 MiB samples)", 64, 64, 64 * 64, false},
  };
  int failed = 0;
  for (const Shape& s : shapes) {
    failed |= s.bf16 ? run_shape<__nv_bfloat16>(s, sms) : run_shape<float>(s, sms);
  }
  std::printf(failed ? "SOME VARIANT WRONG OR FAILED\n" : "all variants ok\n");
  return failed;
}
