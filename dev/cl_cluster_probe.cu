// dev scratch (issue 19; dev/cl-cluster/README.md says what decides it): channels_last's forward
// with a thread-block cluster a sample, the shape that took NCHW's 1-2 MiB slices to 1.12-1.16x a
// copy (shared_resident), tried on NHWC samples of 1-2 MiB. cl-bf16 (64 samples of 64 channels x
// 128x128 bfloat16) runs 1.70x a copy through the library's one-round streamed kernel, which reads
// x twice from DRAM past the L2. The resident form of dev/VARIANTS.md 55 held a sample over CTAs
// that exchanged through L2 and ran 2.0x: the group waited in lockstep (load, reduce, wait,
// combine, store), and its column reduction took about 22 instructions an element (one 2-byte
// element a thread a row). Here, instead:
//   - a cluster of G CTAs holds a sample, each CTA rows_per_cta whole rows of it in shared memory
//     (bulk copies: x read once from DRAM), one CTA an SM;
//   - a thread takes a 16-byte run of channels (8 bfloat16, 4 float32) on every row it visits, so
//     its sums stay in registers, reduced by warp shuffles and one pass over the warps;
//   - each CTA's sums a channel (two passes: its mean, then d = x - that mean, summed and squared)
//     go to the others through distributed shared memory at one cluster barrier, merged (Chan) in
//     float64 by a thread a channel; y = ((x - hi) - lo) * scale + bias as the library's affine;
//   - the tile lands in `pieces` bulk copies, each with its barrier: the statistics start on the
//     first piece, and the next sample's piece p is loaded as soon as every thread has written
//     piece p of this one (pieces = 1: none of that overlap);
//   - its skeleton (kStatistics false): the same loads, barriers and stores without the two passes
//     of statistics or the exchange, y = x: the memory schedule's own cost.
// Checked against a float64 reference on three samples and for NaN over the whole output (poisoned
// before each checked run); timed against cudaMemcpyAsync of the same tensor, CUDA events (each
// sample queued behind a 50 us hold of the GPU), median of 25 after 3 warm-ups. The library's
// number is inorm-bench's on the same shapes in the same device call (dev/cl-cluster/call.sh).
// Not library code: built by CI so it keeps compiling (target inorm-dev-cl-cluster), run by hand
// on a GPU: inorm-dev-cl-cluster.
#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "check_cuda.h"

namespace cg = cooperative_groups;

constexpr int kMaxChannels = 128;  // C of a sample: at most 32 runs of 16 bytes a row (a warp's lanes)

// A 16-byte run of channels: its elements as float, and back (round to nearest even).
template <typename T>
struct Run;
template <>
struct Run<float> {
  static constexpr int kVec = 4;
  __device__ static void unpack(const uint4& u, float (&f)[4]) {
    f[0] = __uint_as_float(u.x);
    f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z);
    f[3] = __uint_as_float(u.w);
  }
  __device__ static uint4 pack(const float (&f)[4]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  }
  static double host_value(const float* p) { return *p; }
};
template <>
struct Run<__nv_bfloat16> {
  static constexpr int kVec = 8;
  __device__ static void unpack(const uint4& u, float (&f)[8]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  __device__ static unsigned pack2(float lo, float hi) {
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
    unsigned w;
    std::memcpy(&w, &b, sizeof w);
    return w;
  }
  __device__ static uint4 pack(const float (&f)[8]) {
    return make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
  }
  static double host_value(const __nv_bfloat16* p) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    const uint32_t w = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &w, sizeof f);
    return f;
  }
};

struct Args {
  const void* x;
  void* y;
  const float* weight;  // [C]
  const float* bias;    // [C]
  int64_t samples;
  int64_t rows;      // spatial positions a sample
  int channels;      // C
  int group;         // CTAs a sample: the cluster
  int rows_per_cta;  // every rank's but the last, which takes the rest
  int piece_rows;    // rows a bulk copy
  float eps;
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

template <typename T, int kThreads, int kPieces, bool kStatistics = true>
__global__ void __launch_bounds__(kThreads, 1) cluster_forward(const __grid_constant__ Args a) {
  using R = Run<T>;
  constexpr int kVec = R::kVec;
  constexpr int kWarps = kThreads / 32;
  extern __shared__ __align__(128) unsigned char tile[];
  __shared__ uint64_t landed[kPieces];
  // This CTA's (shift, sum of d, sum of d^2) a channel, d = x - shift (its float32 mean), by the
  // sample's parity.
  __shared__ float4 cells[2][kMaxChannels];
  __shared__ float4 coefficients[kMaxChannels];  // (center hi, center lo, scale, bias); first the CTA's mean in .x
  __shared__ float2 red[kWarps][kMaxChannels];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int64_t clusters = gridDim.x / a.group;
  const int runs = a.channels / kVec;
  const int run = static_cast<int>(threadIdx.x) % runs;
  const int step = kThreads / runs;
  const int first_row = static_cast<int>(threadIdx.x) / runs;
  const int my_rows =
      static_cast<int>(min(static_cast<int64_t>(a.rows_per_cta), a.rows - static_cast<int64_t>(rank) * a.rows_per_cta));
  const int pieces = (my_rows + a.piece_rows - 1) / a.piece_rows;
  const int row_bytes = a.channels * static_cast<int>(sizeof(T));
  if (threadIdx.x == 0) {
    for (int p = 0; p < kPieces; ++p) cuda::ptx::mbarrier_init(&landed[p], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  const auto rows_of = [&](int p) { return min(a.piece_rows, my_rows - p * a.piece_rows); };
  const auto issue = [&](int64_t sample, int p) {  // thread 0: piece p of `sample` into the tile
    const uint32_t bytes = static_cast<uint32_t>(rows_of(p)) * row_bytes;
    const int64_t row =
        sample * a.rows + static_cast<int64_t>(rank) * a.rows_per_cta + static_cast<int64_t>(p) * a.piece_rows;
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                         &landed[p], bytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global,
                             tile + static_cast<int64_t>(p) * a.piece_rows * row_bytes,
                             static_cast<const unsigned char*>(a.x) + row * row_bytes, bytes, &landed[p]);
  };
  // f(p, v) for this thread's rows of piece p, v its run of the row as read from the tile.
  const auto for_rows = [&](int p, auto&& f) {
    const int end = p * a.piece_rows + rows_of(p);
#pragma unroll 4  // four 16-byte shared loads in flight a thread
    for (int r = p * a.piece_rows + first_row; r < end; r += step) {
      f(r, *reinterpret_cast<const uint4*>(tile + static_cast<int64_t>(r) * row_bytes + run * 16));
    }
  };
  // The sample's statistics from the landing tile: each channel's coefficients.
  const auto statistics = [&](uint32_t parity) {
    float sum[1][kVec] = {};
    for (int p = 0; p < pieces; ++p) {
      wait_parity(&landed[p], parity);
      for_rows(p, [&](int, const uint4& u) {
        float f[kVec];
        R::unpack(u, f);
#pragma unroll
        for (int e = 0; e < kVec; ++e) sum[0][e] += f[e];
      });
    }
    const float local_sum = cta_channel_sums<kVec, kWarps>(sum, runs, a.channels, red).x;
    if (static_cast<int>(threadIdx.x) < a.channels) coefficients[threadIdx.x].x = local_sum / my_rows;
    __syncthreads();
    // The second pass around that mean, with the residual sum of d that corrects it (as the
    // library's Partial: kernels/forward_op.cuh).
    float shift[kVec], d_sums[2][kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      shift[e] = coefficients[run * kVec + e].x;
      d_sums[0][e] = 0.f;
      d_sums[1][e] = 0.f;
    }
    for (int p = 0; p < pieces; ++p) {
      for_rows(p, [&](int, const uint4& u) {
        float f[kVec];
        R::unpack(u, f);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float d = f[e] - shift[e];
          d_sums[0][e] += d;
          d_sums[1][e] = fmaf(d, d, d_sums[1][e]);
        }
      });
    }
    const float2 local = cta_channel_sums<kVec, kWarps>(d_sums, runs, a.channels, red);
    const int c = static_cast<int>(threadIdx.x);
    if (c < a.channels) cells[parity][c] = make_float4(coefficients[c].x, local.x, local.y, 0.f);
    // Every CTA's cells written (release) and seen (acquire); a CTA writes these cells again two
    // samples on, after the next barrier, which no CTA passes before it is done reading them.
    cluster.sync();
    if (c < a.channels) {
      double n = 0.0, mean_all = 0.0, m2_all = 0.0;
      for (int q = 0; q < a.group; ++q) {
        const float4 cell = *cluster.map_shared_rank(&cells[parity][c], q);
        const double nq = static_cast<double>(
            min(static_cast<int64_t>(a.rows_per_cta), a.rows - static_cast<int64_t>(q) * a.rows_per_cta));
        const double mean_q = cell.x + static_cast<double>(cell.y) / nq;
        const double m2_q = cell.z - static_cast<double>(cell.y) * cell.y / nq;
        const double delta = mean_q - mean_all;  // Chan's merge
        const double total = n + nq;
        mean_all += delta * nq / total;
        m2_all += m2_q + delta * delta * n * nq / total;
        n = total;
      }
      // The library's affine: ((x - hi) - lo) * scale + bias, the mean in two floats (kernels/common.cuh).
      const float hi = static_cast<float>(mean_all);
      const float rstd = static_cast<float>(1.0 / ::sqrt(m2_all / n + a.eps));
      coefficients[c] = make_float4(hi, static_cast<float>(mean_all - hi), rstd * a.weight[c], a.bias[c]);
    }
  };
  int64_t sample = blockIdx.x / a.group;
  if (threadIdx.x == 0 && sample < a.samples) {
    for (int p = 0; p < pieces; ++p) issue(sample, p);
  }
  // Every CTA of the cluster takes the same samples (a sample a cluster, strided).
  for (uint32_t parity = 0; sample < a.samples; parity ^= 1u, sample += clusters) {
    if constexpr (kStatistics) {
      statistics(parity);
    } else {
      for (int p = 0; p < pieces; ++p) wait_parity(&landed[p], parity);
      if (threadIdx.x < a.channels) coefficients[threadIdx.x] = make_float4(0.f, 0.f, 1.f, 0.f);
      cluster.sync();
    }
    __syncthreads();
    float4 coefficient[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) coefficient[e] = coefficients[run * kVec + e];
    unsigned char* const out = static_cast<unsigned char*>(a.y) +
                               (sample * a.rows + static_cast<int64_t>(rank) * a.rows_per_cta) * row_bytes + run * 16;
    const int64_t next = sample + clusters;
    for (int p = 0; p < pieces; ++p) {
      for_rows(p, [&](int r, const uint4& u) {
        float f[kVec];
        R::unpack(u, f);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float4& k = coefficient[e];
          f[e] = fmaf((f[e] - k.x) - k.y, k.z, k.w);
        }
        *reinterpret_cast<uint4*>(out + static_cast<int64_t>(r) * row_bytes) = R::pack(f);
      });
      __syncthreads();  // every thread is past its reads of piece p
      if (threadIdx.x == 0 && next < a.samples) issue(next, p);
    }
  }
  cluster.sync();  // no CTA leaves while another may read its cells
}

// x[sample, row, c] = mu + sigma * N(0, 1), mu and sigma a (sample, channel): offsets of up to 1000.
template <typename T>
__global__ void fill(T* x, int64_t samples, int64_t rows, int channels, uint32_t seed) {
  const int64_t n = samples * rows * channels;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t slice = (i / (rows * channels)) * channels + i % channels;
    const auto hash = [](uint64_t v) {
      v ^= v >> 33;
      v *= 0xff51afd7ed558ccdull;
      v ^= v >> 33;
      v *= 0xc4ceb9fe1a85ec53ull;
      v ^= v >> 33;
      return v;
    };
    const uint64_t h = hash(static_cast<uint64_t>(i) * 2654435761ull + seed);
    const float u1 = (static_cast<float>(h & 0xffffffu) + 0.5f) / 16777216.f;
    const float u2 = static_cast<float>((h >> 24) & 0xffffffu) / 16777216.f;
    const float normal = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
    const uint64_t hs = hash(static_cast<uint64_t>(slice) + seed * 7919ull);
    const float mu = static_cast<float>(static_cast<int>(hs % 1501) - 500);
    const float sigma = 0.25f + static_cast<float>((hs >> 16) % 400) / 100.f;
    x[i] = static_cast<T>(mu + sigma * normal);
  }
}

// Holds the GPU for `ns` so that the host queues the timed launch and its events behind it: a
// sample then times the GPU alone, not the launch's latency (as inorm-bench's gpu_sleep).
__global__ void hold(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

template <typename T>
__global__ void count_nan(const T* y, int64_t n, unsigned long long* bad) {
  unsigned long long c = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    c += isnan(static_cast<float>(y[i])) ? 1 : 0;
  }
  if (c != 0) atomicAdd(bad, c);
}

struct Shape {
  const char* id;
  int64_t samples, channels, rows;
  bool bf16;
};

template <typename T>
int run_shape(const Shape& s, int sms) {
  using R = Run<T>;
  const int64_t n = s.samples * s.rows * s.channels;
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const int row_bytes = static_cast<int>(s.channels * sizeof(T));
  T *x = nullptr, *y = nullptr;
  float *weight = nullptr, *bias = nullptr;
  unsigned long long* bad = nullptr;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  CK(cudaMalloc(&weight, s.channels * sizeof(float)));
  CK(cudaMalloc(&bias, s.channels * sizeof(float)));
  CK(cudaMalloc(&bad, sizeof *bad));
  fill<<<1056, 256>>>(x, s.samples, s.rows, static_cast<int>(s.channels), 12345u);
  std::vector<float> w(s.channels), b(s.channels);
  for (int c = 0; c < s.channels; ++c) {
    w[c] = 0.5f + 0.01f * static_cast<float>(c % 97);
    b[c] = -1.f + 0.02f * static_cast<float>(c % 89);
  }
  CK(cudaMemcpy(weight, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(bias, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  bool failed = false;
  const auto time = [&](const std::function<cudaError_t()>& launch) -> double {
    cudaError_t err = cudaSuccess;
    for (int i = 0; i < 3 && err == cudaSuccess; ++i) err = launch();
    std::vector<float> ms;
    for (int i = 0; i < 25 && err == cudaSuccess; ++i) {
      hold<<<1, 1>>>(50000);
      cudaEventRecord(e0);
      err = launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t = 0.f;
      cudaEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess || ms.empty()) {
      std::printf("  !! %s\n", cudaGetErrorString(err));
      failed = true;
      return NAN;
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double copy = time([&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
  std::printf("%s: %lld x %lld channels x %lld rows %s, %.1f MiB (%.2f MiB a sample); copy %.4f ms\n", s.id,
              static_cast<long long>(s.samples), static_cast<long long>(s.channels), static_cast<long long>(s.rows),
              s.bf16 ? "bf16" : "fp32", bytes / 1048576.0, bytes / 1048576.0 / s.samples, copy);

  // The float64 reference of samples 0, N/2 and N-1, from the inputs as stored.
  std::vector<int64_t> checked = {0, s.samples / 2, s.samples - 1};
  const int64_t sample_elems = s.rows * s.channels;
  std::vector<T> hx(sample_elems), hy(sample_elems);

  // skeleton: y = x, so it is checked against x (the reference with mean 0, rstd 1, no affine).
  const auto variant = [&](auto kernel, int threads, int pieces, int group, bool skeleton = false) -> int {
    const int runs = static_cast<int>(s.channels) / R::kVec;
    if (s.channels % R::kVec != 0 || runs > 32 || 32 % runs != 0 || s.channels > kMaxChannels) return 0;
    // Rows a CTA: whole pieces; the last rank takes the rest. (A piece's rows need not be a multiple
    // of the step: each piece's rows go round the threads from its first.)
    const int piece_rows = static_cast<int>(((s.rows + group - 1) / group + pieces - 1) / pieces);
    const int rows_per_cta = piece_rows * pieces;
    const int smem = rows_per_cta * row_bytes;
    char label[96];
    std::snprintf(label, sizeof label, "c%-2d %4d threads %d pieces%s %3d KiB a CTA", group, threads, pieces,
                  skeleton ? " skeleton" : "", smem / 1024);
    if (static_cast<int64_t>(rows_per_cta) * (group - 1) >= s.rows) {
      std::printf("  %s: skipped, the last rank would be empty\n", label);
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
    attr.val.clusterDim.x = group;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.gridDim = dim3(group);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess || clusters == 0) {
      cudaGetLastError();
      std::printf("  %s: skipped, no cluster fits\n", label);
      return 0;
    }
    clusters = static_cast<int>(std::min<int64_t>(clusters, s.samples));
    cfg.gridDim = dim3(clusters * group);
    const Args args{
        x, y, weight, bias, s.samples, s.rows, static_cast<int>(s.channels), group, rows_per_cta, piece_rows, 1e-5f};
    const auto launch = [&] { return cudaLaunchKernelEx(&cfg, kernel, args); };
    // Checked run: poisoned output (NaN), then every element not NaN and three samples against float64.
    CK(cudaMemset(y, 0xff, bytes));
    CK(launch());
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(bad, 0, sizeof *bad));
    count_nan<<<1056, 256>>>(y, n, bad);
    unsigned long long nans = 0;
    CK(cudaMemcpy(&nans, bad, sizeof nans, cudaMemcpyDeviceToHost));
    double worst = 0.0;
    int64_t outside = 0;
    for (const int64_t sample : checked) {
      CK(cudaMemcpy(hx.data(), x + sample * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hy.data(), y + sample * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      for (int c = 0; c < s.channels; ++c) {
        double sum = 0.0;
        for (int64_t r = 0; r < s.rows; ++r) sum += R::host_value(&hx[r * s.channels + c]);
        const double mean = skeleton ? 0.0 : sum / s.rows;
        double m2 = 0.0;
        for (int64_t r = 0; r < s.rows; ++r) {
          const double d = R::host_value(&hx[r * s.channels + c]) - mean;
          m2 += d * d;
        }
        const double rstd = skeleton ? 1.0 : 1.0 / std::sqrt(m2 / s.rows + 1e-5);
        for (int64_t r = 0; r < s.rows; ++r) {
          const double ref = (R::host_value(&hx[r * s.channels + c]) - mean) * rstd * (skeleton ? 1.0 : w[c]) +
                             (skeleton ? 0.0 : b[c]);
          const double err = std::fabs(R::host_value(&hy[r * s.channels + c]) - ref);
          // bfloat16 output: half an ulp of rounding (2^-8 relative) and float32 arithmetic on the
          // way; float32 output: float32 arithmetic around offsets of up to 1000.
          const double tol = s.bf16 ? 1e-2 + 4e-3 * std::fabs(ref) : 1e-4 + 1e-4 * std::fabs(ref);
          worst = std::max(worst, err);
          outside += err > tol || std::isnan(err);
        }
      }
    }
    const double ms = time(launch);
    std::printf("  %s, %2d clusters (%3d of %d SMs): %.4f ms  %.3fx copy  %s (NaN %llu, outside %lld, worst %.2e)\n",
                label, clusters, clusters * group, sms, ms, ms / copy, nans == 0 && outside == 0 ? "ok" : "WRONG", nans,
                static_cast<long long>(outside), worst);
    std::fflush(stdout);
    failed = failed || nans != 0 || outside != 0;
    return 0;
  };
  for (const int group : {16, 12, 8}) {
    int errors = variant(cluster_forward<T, 512, 1>, 512, 1, group);
    errors += variant(cluster_forward<T, 512, 4>, 512, 4, group);
    errors += variant(cluster_forward<T, 512, 8>, 512, 8, group);
    errors += variant(cluster_forward<T, 256, 4>, 256, 4, group);
    errors += variant(cluster_forward<T, 1024, 4>, 1024, 4, group);
    errors += variant(cluster_forward<T, 512, 4, false>, 512, 4, group, true);
    failed = failed || errors != 0;
  }
  std::printf("  copy again %.4f ms\n", time([&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); }));
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(weight));
  CK(cudaFree(bias));
  CK(cudaFree(bad));
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
