// dev scratch (issue 19; dev/VARIANTS.md 96, 98 and 120): the channels_last seeds' forward and
// backward (112x64x512x512, samples of 32 MiB bfloat16 and 64 MiB float32) with x (and dy) read once
// from device memory. The library reads them twice there (a streamed reduction, then the elementwise
// pass: 1.49-1.58x a copy forward, 1.62-1.83x of 1.5 copies backward), since no cluster holds a
// sample and the L2 (50-60 MiB) holds one at most. Earlier tries
// that kept parts on chip between a sample's reduction and its writes waited in lockstep: a round
// trip through the counters each part or round (96: 17-20 us a round; 98: about 3.8 us a part; 120:
// 8-20 us a round), with device memory idle through it. Here the wait sits behind a whole unit's reads:
//   - the grid is one CTA an SM (a cooperative launch: every CTA resident) and takes the units in
//     order, all CTAs on each: a unit is `block` channels of one sample (all 64, or 32 or 16 of them:
//     units of 8-32 MiB whose rows are 32-128 bytes of each 128- or 256-byte row of x);
//   - a CTA's share of a unit is its slice of the rows, R/G of them: its first `held` rows land in
//     shared memory (cp.async, in a ring of lag + 1 buffers by unit), the rest stream through
//     registers and are read again from L2 `lag` units later (the L2 holds lag + 1 units' streamed rows);
//   - iteration i reduces unit i (A) and then writes unit i - lag (B), so with lag 1 the wait for
//     unit i - 1's statistics runs behind all of unit i's reads, with lag 2 behind two units' (for
//     units of 16 MiB and less, whose reads may be shorter than the wait); lag 0 (write each unit
//     right after its own reduction) is the lockstep this replaces;
//   - 16 data warps and one sync warp: the data warps sum their rows (shifted by the unit's first row,
//     float32), shuffle, write the CTA's sums in shared memory and arrive on a barrier; the sync warp
//     publishes the CTA's partials, arrives on its group's counter (12 CTAs), whose last CTA sums the
//     group's partials in float64 and arrives on the unit's counter, whose last group writes the
//     unit's coefficients (mean as hi + lo, rstd) and its flag. No data warp waits on a fence; each
//     waits only for the flag of the unit it writes, and reads the coefficients from global memory;
//   - L2 hints (Args::hints 1): the streamed rows evict-last, the held rows, the second reads and y
//     evict-first, so that the L2 keeps the rows it is to serve again; hints 0: evict-normal;
//   - the backward (kBackward) the same way over x and dy (a buffer holds both inputs' rows): the
//     sums of dy and of dy * (x - mean) with the saved statistics, then dx in the second pass;
//   - its skeleton (kSync false): the same loads and stores without the statistics or any wait, y = x
//     (backward dx = dy).
// ptxas: 95-120 registers a thread (__maxnreg__ 120: 544 threads an SM), 12 bytes of spills in the
// bfloat16 instances with the statistics, none elsewhere.
// Checked against float64 on samples 0, N/2 and N-1 (y and the saved mean and rstd; dx from the saved
// statistics as the kernel takes them) and for NaN over the whole output (poisoned before the checked
// run); timed against cudaMemcpyAsync of the same tensor (the backward's floor 1.5 copies), CUDA
// events, each sample queued behind a 50 us hold of the GPU, median of 25 after 3 warm-ups.
// Expected (H200, written before any run): the bfloat16 seed with all 64 channels a unit and 96 KiB
// a buffer (19.6 MiB streamed a unit, 39 MiB of L2 for two) 1.57 -> 1.10-1.20x a copy if the L2 keeps
// those rows and the arrival chain (six or seven round trips, about 4-5 us) hides behind a unit's
// reads (7.8 us); 32 channels a unit (16 MiB, 3.6 MiB streamed) about the same if device memory serves
// 64-byte runs at speed; float32 with 64 channels (51.6 MiB streamed) near 1.5 (the L2 misses), with
// 32 like bfloat16's 64, with 16 like its 32. Lag 0 well above lag 1 (the chain exposed each unit);
// lag 2 ahead of lag 1 on 16 MiB units only. The backward of 32 channels a unit (32 MiB of x and dy,
// 19.6 MiB streamed) 1.77 -> 1.15-1.25x of 1.5 copies on the bfloat16 seed, likewise 16 on float32.
// Not library code: built by CI so it keeps compiling (target inorm-dev-cl-pipeline), run by hand on
// a GPU: inorm-dev-cl-pipeline [small|all] [wait limit, s] (small: the correctness shapes alone; the
// limit, 1 s unless given, is how long a wait may spin before the run is reported hung).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda/ptx>
#include <functional>
#include <vector>

#include "check_cuda.h"
#include "cl_probe_common.cuh"

constexpr int kMaxBlock = 64;   // channels a unit: two a sync-warp lane
constexpr int kGroupCtas = 12;  // CTAs a first-level arrival group
constexpr int kMaxLag = 2;
constexpr int kMaxRing = kMaxLag + 1;
constexpr int kDataThreads = 512;
// Streamed rows in flight a thread from device memory (128 bytes of each input forward, 64 of x and
// of dy backward), and from L2 (the second reads, with the coefficients in registers).
constexpr int kUnrollForward = 8;
constexpr int kUnrollBackward = 4;
constexpr int kUnrollAgainForward = 4;
constexpr int kUnrollAgainBackward = 2;

struct Args {
  const void* x;
  const void* dy;  // the backward's
  void* y;         // the forward's y, the backward's dx
  float* mean;     // [N * C]: the forward's output, the backward's saved statistics
  float* rstd;
  // A CTA's sums of two channels: forward (sum of d, sum of d^2), d = x - the unit's first row;
  // backward (sum of dy, sum of dy * (x - mean)).
  float4* partials;         // [ring][G][kMaxBlock / 2]
  double2* group_partials;  // [ring][groups][kMaxBlock]: a group's sums
  // A unit's channels' coefficients: forward (mean hi, mean lo, rstd, 0), y = ((x - hi) - lo) * rstd;
  // backward (mean, rstd, rstd * mean(dy), rstd^3 * sum(dy * (x - mean)) / n),
  // dx = rstd * dy - c1 - (x - mean) * c2.
  float4* coef;  // [units][kMaxBlock]
  int* counters;            // [units][groups + 1]: each group's arrivals, then the unit's groups
  int* published;           // [units]
  int* abort;               // set by a wait past wait_limit_ns: every wait then gives up (a hang reported, not forever)
  uint64_t wait_limit_ns;   // a wait this long is taken for a hang
  int64_t samples, rows;
  int channels, block;  // block: channels a unit
  int64_t units;
  int held_rows;  // a CTA's rows held in shared memory, a buffer
  int lag;        // 0 to kMaxLag: a ring of lag + 1 buffers, CTA sums and partials, by unit
  int hints;      // 0: evict-normal; 1: the streamed rows evict-last, the rest evict-first
  float eps;
};

__device__ __forceinline__ uint64_t l2_policy(int priority) {  // 0 normal, 1 first, 2 last
  uint64_t p;
  if (priority == 1) {
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  } else if (priority == 2) {
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  }
  return p;
}
// x and dy are read-only for the kernel's life, so their loads carry no ordering.
__device__ __forceinline__ uint4 load_input(const unsigned char* p, uint64_t policy) {
  uint4 v;
  asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void store_y(unsigned char* p, const uint4& v, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void copy_async(unsigned char* smem, const unsigned char* g, uint64_t policy) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s), "l"(g), "l"(policy)
               : "memory");
}
__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Spins until ready() or, past Args::wait_limit_ns (or once any wait has), gives up; false where it gave up.
template <typename F>
__device__ bool wait_for(const Args& a, F&& ready) {
  const uint64_t start = now_ns();
  while (!ready()) {
    if (*reinterpret_cast<volatile int*>(a.abort) != 0) return false;
    if (now_ns() - start > a.wait_limit_ns) {
      atomicExch(a.abort, 1);
      return false;
    }
    __nanosleep(32);
  }
  return true;
}

__device__ __forceinline__ float element(const float* p) { return *p; }
__device__ __forceinline__ float element(const __nv_bfloat16* p) { return __bfloat162float(*p); }

// Rows of CTA g: [rows * g / G, rows * (g + 1) / G).
__device__ __forceinline__ int64_t first_row(int64_t rows, int g, int grid) { return rows * g / grid; }

// The sync warp's part for unit u: the CTA's partials, the group's arrival and, where last, the
// group's sums and the unit's arrival and, where last again, the unit's coefficients.
template <typename T, bool kBackward>
__device__ void publish_unit(const Args& a, int64_t u, const float2 (*red)[kMaxBlock], int warps) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  const int groups = (grid + kGroupCtas - 1) / kGroupCtas, group = g / kGroupCtas;
  const int slot = static_cast<int>(u % (a.lag + 1));
  const int c0 = 2 * lane;  // this lane's channels c0 and c0 + 1 of the unit
  const bool mine = c0 < a.block;
  float4 sums = make_float4(0.f, 0.f, 0.f, 0.f);
  if (mine) {
    for (int w = 0; w < warps; ++w) {
      sums.x += red[w][c0].x;
      sums.y += red[w][c0].y;
      sums.z += red[w][c0 + 1].x;
      sums.w += red[w][c0 + 1].y;
    }
    __stcg(&a.partials[(static_cast<int64_t>(slot) * grid + g) * (kMaxBlock / 2) + lane], sums);
  }
  __threadfence();
  __syncwarp();
  int* const counters = a.counters + u * (groups + 1);
  int arrived = 0;
  if (lane == 0) arrived = atomicAdd(&counters[group], 1);
  arrived = __shfl_sync(0xffffffffu, arrived, 0);
  const int group_ctas = min(kGroupCtas, grid - group * kGroupCtas);
  if (arrived != group_ctas - 1) return;
  __threadfence();
  double2 s[2] = {make_double2(0.0, 0.0), make_double2(0.0, 0.0)};
  if (mine) {
    for (int j = group * kGroupCtas; j < group * kGroupCtas + group_ctas; ++j) {
      const float4 p = __ldcg(&a.partials[(static_cast<int64_t>(slot) * grid + j) * (kMaxBlock / 2) + lane]);
      s[0].x += p.x;
      s[0].y += p.y;
      s[1].x += p.z;
      s[1].y += p.w;
    }
    double2* const out = a.group_partials + (static_cast<int64_t>(slot) * groups + group) * kMaxBlock;
    __stcg(&out[c0], s[0]);
    __stcg(&out[c0 + 1], s[1]);
  }
  __threadfence();
  __syncwarp();
  if (lane == 0) arrived = atomicAdd(&counters[groups], 1);
  arrived = __shfl_sync(0xffffffffu, arrived, 0);
  if (arrived != groups - 1) return;
  __threadfence();
  if (mine) {
    s[0] = s[1] = make_double2(0.0, 0.0);
    for (int j = 0; j < groups; ++j) {
      const double2* const in = a.group_partials + (static_cast<int64_t>(slot) * groups + j) * kMaxBlock;
      const double2 p0 = __ldcg(&in[c0]), p1 = __ldcg(&in[c0 + 1]);
      s[0].x += p0.x;
      s[0].y += p0.y;
      s[1].x += p1.x;
      s[1].y += p1.y;
    }
    const int64_t blocks = a.channels / a.block, sample = u / blocks;
    const int64_t channel = (u % blocks) * a.block + c0;
    const T* const row0 = static_cast<const T*>(a.x) + sample * a.rows * a.channels + channel;
    const double rows = static_cast<double>(a.rows);
    for (int k = 0; k < 2; ++k) {
      float4 c;
      if constexpr (kBackward) {
        const float mean = a.mean[sample * a.channels + channel + k];
        const double rstd = a.rstd[sample * a.channels + channel + k];
        c = make_float4(mean, static_cast<float>(rstd), static_cast<float>(rstd * s[k].x / rows),
                        static_cast<float>(rstd * rstd * rstd * s[k].y / rows));
      } else {
        const double d = s[k].x / rows;
        const double var = fmax(s[k].y / rows - d * d, 0.0);
        const double mean = element(row0 + k) + d;
        const double rstd = 1.0 / sqrt(var + a.eps);
        const float hi = static_cast<float>(mean);
        c = make_float4(hi, static_cast<float>(mean - hi), static_cast<float>(rstd), 0.f);
        a.mean[sample * a.channels + channel + k] = hi;
        a.rstd[sample * a.channels + channel + k] = static_cast<float>(rstd);
      }
      __stcg(&a.coef[u * kMaxBlock + c0 + k], c);
    }
  }
  __threadfence();
  __syncwarp();
  if (lane == 0) store_release(&a.published[u], 1);
}

// kSync false: the skeleton (y = x forward, dx = dy backward; no statistics, no waits).
template <typename T, bool kSync, bool kBackward>
__global__ void __maxnreg__(120) pipeline(const Args a) {
  using R = Run<T>;
  constexpr int kVec = R::kVec;
  constexpr int kWarps = kDataThreads / 32;
  constexpr int kInputs = kBackward ? 2 : 1;
  constexpr int kUnroll = kBackward ? kUnrollBackward : kUnrollForward;
  constexpr int kUnrollAgain = kBackward ? kUnrollAgainBackward : kUnrollAgainForward;
  extern __shared__ __align__(16) unsigned char smem[];
  const int row_bytes = a.block * static_cast<int>(sizeof(T));
  const int dy_held = a.held_rows * row_bytes;  // where a buffer's dy rows start, after its x rows
  const int held_bytes = kInputs * dy_held;
  const int ring = a.lag + 1;
  auto* const red = reinterpret_cast<float2(*)[kWarps][kMaxBlock]>(smem + ring * held_bytes);  // [ring]
  auto* const red_full = reinterpret_cast<uint64_t*>(smem + ring * held_bytes + ring * sizeof(red[0]));  // [ring]
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int k = 0; k < ring; ++k) cuda::ptx::mbarrier_init(&red_full[k], kDataThreads);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();

  if (tid >= kDataThreads) {  // the sync warp
    if constexpr (kSync) {
      for (int64_t u = 0; u < a.units; ++u) {
        // Unit u's sums are the (u / ring)-th phase of its slot's barrier. The data warps reach unit
        // u + ring only after unit u's flag, so no phase completes twice before this wait.
        const int k = static_cast<int>(u % ring);
        const uint32_t parity = static_cast<uint32_t>((u / ring) & 1);
        if (!wait_for(a, [&] { return cuda::ptx::mbarrier_try_wait_parity(&red_full[k], parity); })) return;
        publish_unit<T, kBackward>(a, u, red[k], kWarps);
      }
    }
    return;
  }

  const int g = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  const int64_t r0 = first_row(a.rows, g, grid);
  const int my_rows = static_cast<int>(first_row(a.rows, g + 1, grid) - r0);
  const int held = min(my_rows, a.held_rows);
  const int runs = row_bytes / 16;  // 16-byte runs a row; divides 32
  const int run = tid % runs, lane_row = tid / runs, step = kDataThreads / runs;
  const int64_t row_stride = static_cast<int64_t>(a.channels) * sizeof(T);
  const int64_t blocks = a.channels / a.block;
  const int streamed = my_rows - held;
  const int count = streamed > lane_row ? (streamed - lane_row + step - 1) / step : 0;  // my streamed rows
  const uint64_t keep = l2_policy(a.hints == 1 ? 2 : 0);
  const uint64_t once = l2_policy(a.hints == 1 ? 1 : 0);
  // Byte offset of this thread's run of row 0 of unit u's CTA share.
  const auto unit_offset = [&](int64_t u) {
    const int64_t sample = u / blocks, channel = (u % blocks) * a.block;
    return (sample * a.rows + r0) * row_stride + channel * static_cast<int64_t>(sizeof(T)) + run * 16;
  };
  const auto* const x = static_cast<const unsigned char*>(a.x);
  const auto* const dy = static_cast<const unsigned char*>(a.dy);  // read only backward
  auto* const y = static_cast<unsigned char*>(a.y);

  for (int64_t i = 0; i < a.units + a.lag; ++i) {
    if (i < a.units) {  // A: unit i's reduction
      const int k = static_cast<int>(i % ring);
      unsigned char* const buf = smem + k * held_bytes;
      const int64_t offset = unit_offset(i);
      for (int r = lane_row; r < held; r += step) {
        copy_async(buf + r * row_bytes + run * 16, x + offset + r * row_stride, once);
        if (kBackward) copy_async(buf + dy_held + r * row_bytes + run * 16, dy + offset + r * row_stride, once);
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
      // Forward: the unit's first row, the shift of its sums; backward: the saved mean.
      float shift[kVec], s1[kVec], s2[kVec];
      {
        const int64_t sample = i / blocks, channel = (i % blocks) * a.block + run * kVec;
        if constexpr (kBackward) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) shift[e] = a.mean[sample * a.channels + channel + e];
        } else {
          R::unpack(load_input(x + (sample * a.rows * a.channels + channel) * sizeof(T), keep), shift);
        }
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) s1[e] = s2[e] = 0.f;
      const auto add = [&](const uint4& xv, const uint4& gv) {
        float f[kVec], gf[kVec];
        R::unpack(xv, f);
        if (kBackward) R::unpack(gv, gf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float d = f[e] - shift[e];
          const float w = kBackward ? gf[e] : d;
          s1[e] += w;
          s2[e] = fmaf(w, d, s2[e]);
        }
      };
      const unsigned char* const stream_x = x + offset + (held + lane_row) * row_stride;
      const unsigned char* const stream_dy = dy + offset + (held + lane_row) * row_stride;
      for (int k0 = 0; k0 < count; k0 += kUnroll) {
        uint4 v[kUnroll], w[kUnroll];
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          const int64_t at = static_cast<int64_t>(k0 + j) * step * row_stride;
          if (k0 + j < count) v[j] = load_input(stream_x + at, keep);
          if (kBackward && k0 + j < count) w[j] = load_input(stream_dy + at, keep);
        }
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          if (k0 + j < count) add(v[j], w[j]);
        }
      }
      asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll 4
      for (int r = lane_row; r < held; r += step) {
        const unsigned char* const at = buf + r * row_bytes + run * 16;
        add(*reinterpret_cast<const uint4*>(at), kBackward ? *reinterpret_cast<const uint4*>(at + dy_held) : uint4{});
      }
      if (!kSync && s1[0] == -1.2345e-30f) a.mean[0] = s2[0];  // keeps the skeleton's sums, and so its loads
      if (kSync) {
        for (int apart = runs; apart < 32; apart *= 2) {  // the lanes of one run
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            s1[e] += __shfl_xor_sync(0xffffffffu, s1[e], apart);
            s2[e] += __shfl_xor_sync(0xffffffffu, s2[e], apart);
          }
        }
        if (tid % 32 < runs) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) red[k][tid / 32][run * kVec + e] = make_float2(s1[e], s2[e]);
        }
        cuda::ptx::mbarrier_arrive(&red_full[k]);
      }
    }
    const int64_t u = i - a.lag;
    if (u >= 0 && u < a.units) {  // B: unit u's output
      float c0[kVec], c1[kVec], c2[kVec], c3[kVec];  // the coefficients, as Args::coef
      if (kSync) {
        wait_for(a, [&] { return load_acquire(&a.published[u]) != 0; });
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float4 c = __ldcg(&a.coef[u * kMaxBlock + run * kVec + e]);
          c0[e] = c.x;
          c1[e] = c.y;
          c2[e] = c.z;
          c3[e] = c.w;
        }
      } else {  // forward y = x, backward dx = dy
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          c0[e] = c3[e] = 0.f;
          c1[e] = kBackward ? 1.f : 0.f;
          c2[e] = kBackward ? 0.f : 1.f;
        }
      }
      const auto apply = [&](const uint4& xv, const uint4& gv) {
        float f[kVec], gf[kVec];
        R::unpack(xv, f);
        if (kBackward) R::unpack(gv, gf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          f[e] = kBackward ? c1[e] * gf[e] - c2[e] - (f[e] - c0[e]) * c3[e] : ((f[e] - c0[e]) - c1[e]) * c2[e];
        }
        return R::pack(f);
      };
      const unsigned char* const buf = smem + (u % ring) * held_bytes;
      const int64_t offset = unit_offset(u);
      unsigned char* const out = y + offset;
#pragma unroll 2
      for (int r = lane_row; r < held; r += step) {
        const unsigned char* const at = buf + r * row_bytes + run * 16;
        store_y(out + r * row_stride,
                apply(*reinterpret_cast<const uint4*>(at),
                      kBackward ? *reinterpret_cast<const uint4*>(at + dy_held) : uint4{}),
                once);
      }
      // The streamed rows again, the last read first (likeliest still in L2).
      const unsigned char* const again_x = x + offset + (held + lane_row) * row_stride;
      const unsigned char* const again_dy = dy + offset + (held + lane_row) * row_stride;
      unsigned char* const out_streamed = out + (held + lane_row) * row_stride;
      for (int k0 = count - 1; k0 >= 0; k0 -= kUnrollAgain) {
        uint4 v[kUnrollAgain], w[kUnrollAgain];
#pragma unroll
        for (int j = 0; j < kUnrollAgain; ++j) {
          const int64_t at = static_cast<int64_t>(k0 - j) * step * row_stride;
          if (k0 - j >= 0) v[j] = load_input(again_x + at, once);
          if (kBackward && k0 - j >= 0) w[j] = load_input(again_dy + at, once);
        }
#pragma unroll
        for (int j = 0; j < kUnrollAgain; ++j) {
          if (k0 - j >= 0) {
            store_y(out_streamed + static_cast<int64_t>(k0 - j) * step * row_stride, apply(v[j], w[j]), once);
          }
        }
      }
    }
  }
}

struct Shape {
  const char* id;
  int64_t samples, channels, rows;
  bool bf16;
  bool timed;  // else checked only (a correctness shape)
};

struct Variant {
  int block;     // channels a unit
  int held_kib;  // a buffer's, a CTA (backward: x's and dy's rows together)
  int lag = 1;
  int hints = 1;
  bool sync = true;
};

template <typename T>
int run_shape(const Shape& s, int sms, const std::vector<Variant>& forward, const std::vector<Variant>& backward,
              double wait_limit_s) {
  using R = Run<T>;
  const int64_t n = s.samples * s.rows * s.channels;
  const int64_t slices = s.samples * s.channels;
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const int groups = (sms + kGroupCtas - 1) / kGroupCtas;
  const int64_t max_units = s.samples * (s.channels / 16);
  T *x = nullptr, *dy = nullptr, *y = nullptr;
  float *mean = nullptr, *rstd = nullptr, *saved_mean = nullptr, *saved_rstd = nullptr;
  float4 *partials = nullptr, *coef = nullptr;
  double2* group_partials = nullptr;
  int* sync_words = nullptr;  // counters, then published, then abort
  unsigned long long* bad = nullptr;
  const size_t sync_bytes = (static_cast<size_t>(max_units) * (groups + 2) + 1) * sizeof(int);
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&dy, bytes));
  CK(cudaMalloc(&y, bytes));  // y, and the backward's dx
  for (float** p : {&mean, &rstd, &saved_mean, &saved_rstd}) CK(cudaMalloc(p, slices * sizeof(float)));
  CK(cudaMalloc(&partials, kMaxRing * sms * (kMaxBlock / 2) * sizeof(float4)));
  CK(cudaMalloc(&group_partials, kMaxRing * groups * kMaxBlock * sizeof(double2)));
  CK(cudaMalloc(&coef, max_units * kMaxBlock * sizeof(float4)));
  CK(cudaMalloc(&sync_words, sync_bytes));
  CK(cudaMalloc(&bad, sizeof *bad));
  fill<<<1056, 256>>>(x, s.samples, s.rows, static_cast<int>(s.channels), 12345u, true);
  fill<<<1056, 256>>>(dy, s.samples, s.rows, static_cast<int>(s.channels), 777u, false);
  reference_stats<<<static_cast<unsigned>((slices + 127) / 128), 128>>>(
      x, s.samples, s.rows, static_cast<int>(s.channels), 1e-5f, saved_mean, saved_rstd);
  CK(cudaDeviceSynchronize());
  std::vector<float> saved[2] = {std::vector<float>(slices), std::vector<float>(slices)};
  CK(cudaMemcpy(saved[0].data(), saved_mean, slices * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(saved[1].data(), saved_rstd, slices * sizeof(float), cudaMemcpyDeviceToHost));

  bool failed = false;
  const auto time = [&](const std::function<cudaError_t()>& launch) {
    const double ms = median_ms(launch);
    failed = failed || std::isnan(ms);
    return ms;
  };
  const auto copy_x = [&] { return cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); };
  const double copy = s.timed ? time(copy_x) : NAN;
  std::printf("%s: %lld x %lld channels x %lld rows %s, %.1f MiB (%.2f MiB a sample); copy %.4f ms\n", s.id,
              static_cast<long long>(s.samples), static_cast<long long>(s.channels), static_cast<long long>(s.rows),
              s.bf16 ? "bf16" : "fp32", bytes / 1048576.0, bytes / 1048576.0 / s.samples, copy);

  // The float64 reference of samples 0, N/2 and N-1 from the inputs as stored: each channel's mean and
  // rstd (the forward's), and with the saved statistics as the kernel takes them, the sum of dy and of
  // dy * (x - mean) (the backward's).
  const std::vector<int64_t> checked = {0, s.samples / 2, s.samples - 1};
  const int64_t sample_elems = s.rows * s.channels;
  std::vector<std::vector<T>> hx(checked.size(), std::vector<T>(sample_elems)), hdy = hx;
  struct Reference {
    std::vector<double> mean, rstd, sum_dy, sum_dy_xmu;
  };
  std::vector<Reference> ref(checked.size());
  for (size_t k = 0; k < checked.size(); ++k) {
    CK(cudaMemcpy(hx[k].data(), x + checked[k] * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hdy[k].data(), dy + checked[k] * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
    Reference& f = ref[k];
    for (auto* v : {&f.mean, &f.rstd, &f.sum_dy, &f.sum_dy_xmu}) v->assign(s.channels, 0.0);
    std::vector<double> m2(s.channels, 0.0);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t c = 0; c < s.channels; ++c) {
        const double xv = R::host_value(&hx[k][r * s.channels + c]), gv = R::host_value(&hdy[k][r * s.channels + c]);
        f.mean[c] += xv;
        f.sum_dy[c] += gv;
        f.sum_dy_xmu[c] += gv * (xv - saved[0][checked[k] * s.channels + c]);
      }
    }
    for (int64_t c = 0; c < s.channels; ++c) f.mean[c] /= s.rows;
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t c = 0; c < s.channels; ++c) {
        const double d = R::host_value(&hx[k][r * s.channels + c]) - f.mean[c];
        m2[c] += d * d;
      }
    }
    for (int64_t c = 0; c < s.channels; ++c) f.rstd[c] = 1.0 / std::sqrt(m2[c] / s.rows + 1e-5);
  }
  std::vector<T> hy(sample_elems);
  std::vector<float> got_mean(slices), got_rstd(slices);

  const auto run = [&](const Variant& v, bool back) {
    const int row_bytes = v.block * static_cast<int>(sizeof(T));
    const int runs = row_bytes / 16;
    const int inputs = back ? 2 : 1;
    char label[160];
    std::snprintf(label, sizeof label, "%s %s block %2d, held %3d KiB a buffer, lag %d, hints %d",
                  back ? "backward" : "forward ", v.sync ? "    " : "skel", v.block, v.held_kib, v.lag, v.hints);
    // Blocks of 16 channels or more: the workspace is sized for those units.
    if (s.channels % v.block != 0 || v.block < 16 || v.block > kMaxBlock || row_bytes % 16 != 0 || 32 % runs != 0 ||
        v.lag < 0 || v.lag > kMaxLag) {
      std::printf("  %s: skipped, not a block or lag the kernel takes\n", label);
      return 0;
    }
    const int rows_per_cta = static_cast<int>((s.rows + sms - 1) / sms);
    const int held_rows = std::min(rows_per_cta, v.held_kib * 1024 / (inputs * row_bytes));
    const int64_t units = s.samples * (s.channels / v.block);
    const auto kernel = back ? (v.sync ? pipeline<T, true, true> : pipeline<T, false, true>)
                             : (v.sync ? pipeline<T, true, false> : pipeline<T, false, false>);
    const int ring = v.lag + 1;  // held buffers, CTA sums and their barriers
    const int smem = ring * (inputs * held_rows * row_bytes + (kDataThreads / 32) * kMaxBlock * 8 + 8);
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      cudaGetLastError();
      std::printf("  %s: skipped, %d bytes of shared memory do not fit a CTA\n", label, smem);
      return 0;
    }
    int resident = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kDataThreads + 32, smem));
    if (resident < 1) {
      std::printf("  %s: skipped, no CTA fits an SM\n", label);
      return 0;
    }
    Args args{};
    args.x = x;
    args.dy = dy;
    args.y = y;
    args.mean = back ? saved_mean : mean;
    args.rstd = back ? saved_rstd : rstd;
    args.partials = partials;
    args.group_partials = group_partials;
    args.coef = coef;
    args.counters = sync_words;
    args.published = sync_words + units * (groups + 1);
    args.abort = sync_words + max_units * (groups + 2);
    args.wait_limit_ns = static_cast<uint64_t>(wait_limit_s * 1e9);
    args.samples = s.samples;
    args.rows = s.rows;
    args.channels = static_cast<int>(s.channels);
    args.block = v.block;
    args.units = units;
    args.held_rows = held_rows;
    args.lag = v.lag;
    args.hints = v.hints;
    args.eps = 1e-5f;
    void* params[] = {&args};
    const auto launch = [&] {
      const cudaError_t e = cudaMemsetAsync(sync_words, 0, sync_bytes);
      if (e != cudaSuccess) return e;
      return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(sms), dim3(kDataThreads + 32),
                                         params, smem);
    };
    // Checked run: poisoned output (NaN), then every element not NaN and three samples against float64.
    CK(cudaMemset(y, 0xff, bytes));
    CK(launch());
    CK(cudaDeviceSynchronize());
    int hung = 0;
    CK(cudaMemcpy(&hung, args.abort, sizeof hung, cudaMemcpyDeviceToHost));
    if (hung != 0) {
      std::printf("  %s: HUNG (a wait gave up after %.1f s)\n", label, wait_limit_s);
      failed = true;
      return 0;
    }
    CK(cudaMemset(bad, 0, sizeof *bad));
    count_nan<<<1056, 256>>>(y, n, bad);
    unsigned long long nans = 0;
    CK(cudaMemcpy(&nans, bad, sizeof nans, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got_mean.data(), mean, slices * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got_rstd.data(), rstd, slices * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0.0;
    int64_t outside = 0;
    for (size_t k = 0; k < checked.size(); ++k) {
      CK(cudaMemcpy(hy.data(), y + checked[k] * sample_elems, sample_elems * sizeof(T), cudaMemcpyDeviceToHost));
      const Reference& f = ref[k];
      for (int64_t c = 0; c < s.channels; ++c) {
        const int64_t slice = checked[k] * s.channels + c;
        if (v.sync && !back) {  // the forward's saved statistics: float32 of float64 sums
          const double e1 = std::fabs(got_mean[slice] - f.mean[c]), e2 = std::fabs(got_rstd[slice] - f.rstd[c]);
          outside += e1 > 1e-6 * std::fabs(f.mean[c]) + 1e-6 || e2 > 1e-5 * f.rstd[c] || std::isnan(e1 + e2);
        }
        const double m = saved[0][slice], rs = saved[1][slice];  // the backward's, as the kernel's
        for (int64_t r = 0; r < s.rows; ++r) {
          const double xv = R::host_value(&hx[k][r * s.channels + c]), gv = R::host_value(&hdy[k][r * s.channels + c]);
          double expected;
          if (!v.sync) {
            expected = back ? gv : xv;
          } else if (back) {
            expected = rs * (gv - f.sum_dy[c] / s.rows - (xv - m) * rs * rs * f.sum_dy_xmu[c] / s.rows);
          } else {
            expected = (xv - f.mean[c]) * f.rstd[c];
          }
          const double err = std::fabs(R::host_value(&hy[r * s.channels + c]) - expected);
          worst = std::max(worst, err);
          // bfloat16: half an ulp of the output's rounding and float32 arithmetic on the way; float32:
          // float32 arithmetic around offsets of up to 1000. dx's terms are each up to rstd * |dy|,
          // about ten times dx's scale at sigma 0.25.
          const double slack = back ? 4.0 : 1.0;
          const double tolerance =
              slack * (s.bf16 ? 1e-2 + 4e-3 * std::fabs(expected) : 1e-4 + 1e-4 * std::fabs(expected));
          outside += err > tolerance || std::isnan(err);
        }
      }
    }
    const double ms = s.timed ? time(launch) : NAN;
    const double floor = back ? 1.5 * copy : copy;
    const double streamed_mib =
        static_cast<double>(rows_per_cta - held_rows) * inputs * row_bytes * sms / 1048576.0;  // a unit, all CTAs
    std::printf("  %s (%lld units, %.1f MiB streamed a unit): %.4f ms  %.3fx %s  %s (NaN %llu, outside %lld, "
                "worst %.2e)\n",
                label, static_cast<long long>(units), streamed_mib, ms, ms / floor, back ? "1.5 copies" : "copy",
                nans == 0 && outside == 0 ? "ok" : "WRONG", nans, static_cast<long long>(outside), worst);
    std::fflush(stdout);
    failed = failed || nans != 0 || outside != 0;
    return 0;
  };
  for (const Variant& v : forward) {
    if (run(v, false) != 0) return 1;
  }
  for (const Variant& v : backward) {
    if (run(v, true) != 0) return 1;
  }
  if (s.timed) std::printf("  copy again %.4f ms\n", time(copy_x));
  for (void* p : std::initializer_list<void*>{x, dy, y, mean, rstd, saved_mean, saved_rstd, partials, group_partials,
                                              coef, sync_words, bad}) {
    CK(cudaFree(p));
  }
  return failed ? 1 : 0;
}

int main(int argc, char** argv) {
  const bool small_only = argc > 1 && std::strcmp(argv[1], "small") == 0;
  const double wait_limit_s = argc > 2 ? std::atof(argv[2]) : 1.0;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // The correctness shapes: rows that do not divide among the CTAs (57x61 = 3477, 27 or 26 a CTA), a
  // CTA's rows all held, or none, or a few past the buffer; every block and lag; the skeleton.
  const std::vector<Variant> small = {
      {64, 96}, {64, 0},   {64, 1},    {32, 2},    {32, 0, 0, 0}, {16, 0},
      {16, 1},  {64, 1, 0}, {64, 0, 2}, {32, 1, 2}, {16, 1, 2},    {64, 1, 1, 1, false},
  };
  // The seeds' forward: 64 channels a unit at 0-100 KiB held, the hints, the lag and the skeleton
  // beside the best guess (96 KiB, lag 1, hints); then 32 and 16 channels a unit, and a lag of 2
  // (three buffers). Their backward (x and dy: twice a unit's bytes) from 32 channels a unit.
  const std::vector<Variant> seed_forward = {
      {64, 96}, {64, 0},  {64, 48},    {64, 100},      {64, 96, 1, 0}, {64, 96, 0}, {64, 64, 2}, {64, 96, 1, 1, false},
      {32, 96}, {32, 48}, {32, 64, 2}, {32, 96, 1, 0}, {16, 96},       {16, 64, 2}, {32, 96, 1, 1, false},
  };
  const std::vector<Variant> seed_backward = {
      {32, 96}, {32, 64, 2}, {32, 96, 1, 0}, {16, 96}, {16, 64, 2}, {64, 96}, {32, 96, 0}, {32, 96, 1, 1, false},
  };
  int failed = 0;
  const auto run = [&](auto zero, const Shape& shape, const std::vector<Variant>& fwd,
                       const std::vector<Variant>& bwd) {
    failed |= run_shape<decltype(zero)>(shape, sms, fwd, bwd, wait_limit_s);
  };
  run(__nv_bfloat16{}, {"odd bf16 6x64x57x61", 6, 64, 57 * 61, true, false}, small, small);
  run(float{}, {"odd fp32 5x64x57x61", 5, 64, 57 * 61, false, false}, small, small);
  if (!small_only) {
    const Shape bf16{"cl-seed-bf16 112x64x512x512", 112, 64, 512 * 512, true, true};
    run(__nv_bfloat16{}, bf16, seed_forward, seed_backward);
    run(float{}, {"cl-seed-fp32 112x64x512x512", 112, 64, 512 * 512, false, true}, seed_forward, seed_backward);
  }
  std::printf(failed ? "SOME VARIANT WRONG OR FAILED\n" : "all variants ok\n");
  return failed;
}
