// dev scratch (dev/VARIANTS.md 48): group_registers' shape on many tiny slices (256x256x16x16
// float32: 65536 slices of 256 values, 1 KiB each), against cudaMemcpyAsync of the same tensor and
// against what torch.compile's kernels do there (one-warp CTAs of four rows, default cache policy;
// ncu in bench/results/2026-12-01-h200-0122419). A stand-in forward (mean, variance, y; mean and
// rstd a slice) and backward (x and dy read, two sums, dx) held in registers, by the cache policy of
// the loads and of the stores and by lanes a slice (time_policies says what the first run also
// tried). Not library code: built by CI so it keeps compiling (target inorm-dev-small-slices), run
// by hand on a GPU: inorm-dev-small-slices [batch].
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <vector>

#include "check_cuda.h"

constexpr int kSliceLen = 256;

// kPolicy bit 1: evict-first loads (ld.global.cs, the library's), else default; bit 2: L2-only
// stores (st.global.cg, the library's), else default write-back.
template <int kPolicy>
__device__ __forceinline__ float4 load(const float* p) {
  if constexpr ((kPolicy & 1) != 0) return __ldcs(reinterpret_cast<const float4*>(p));
  return *reinterpret_cast<const float4*>(p);
}
template <int kPolicy>
__device__ __forceinline__ void store(float* p, float4 v) {
  if constexpr ((kPolicy & 2) != 0) {
    __stcg(reinterpret_cast<float4*>(p), v);
  } else {
    *reinterpret_cast<float4*>(p) = v;
  }
}
constexpr const char* kPolicyNames[] = {"default / default", "cs / default", "default / cg", "cs / cg"};

template <int kLanes>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int m = kLanes / 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// kLanes lanes a slice, each holding kItems = 256 / (4 kLanes) vectors of it; kThreads a CTA.
template <int kThreads, int kLanes, int kPolicy, bool kBackward>
__global__ void __launch_bounds__(kThreads) slices_kernel(const float* x, const float* dy, const float* mean,
                                                          const float* rstd, float* out, float* stat0,
                                                          float* stat1, int64_t num_slices) {
  constexpr int kItems = kSliceLen / (4 * kLanes);
  const int64_t slice = static_cast<int64_t>(blockIdx.x) * (kThreads / kLanes) + threadIdx.x / kLanes;
  const int lane = threadIdx.x % kLanes;
  if (slice >= num_slices) return;  // whole warps: num_slices is a multiple of a CTA's slices
  const int64_t base = slice * kSliceLen;
  float4 a[kItems];
  float4 b[kBackward ? kItems : 1];
#pragma unroll
  for (int j = 0; j < kItems; ++j) a[j] = load<kPolicy>(x + base + (j * kLanes + lane) * 4);
  if constexpr (kBackward) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) b[j] = load<kPolicy>(dy + base + (j * kLanes + lane) * 4);
  }
  if constexpr (!kBackward) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kItems; ++j) s += a[j].x + a[j].y + a[j].z + a[j].w;
    const float m = group_sum<kLanes>(s) / kSliceLen;
    float q = 0.f;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      q += (a[j].x - m) * (a[j].x - m) + (a[j].y - m) * (a[j].y - m) + (a[j].z - m) * (a[j].z - m) +
           (a[j].w - m) * (a[j].w - m);
    }
    const float r = rsqrtf(group_sum<kLanes>(q) / kSliceLen + 1e-5f);
    if (lane == 0) {
      stat0[slice] = m;
      stat1[slice] = r;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      store<kPolicy>(out + base + (j * kLanes + lane) * 4,
                     make_float4((a[j].x - m) * r, (a[j].y - m) * r, (a[j].z - m) * r, (a[j].w - m) * r));
    }
  } else {
    const float m = mean[slice], r = rstd[slice];
    float g = 0.f, gx = 0.f;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      g += b[j].x + b[j].y + b[j].z + b[j].w;
      gx += b[j].x * (a[j].x - m) + b[j].y * (a[j].y - m) + b[j].z * (a[j].z - m) + b[j].w * (a[j].w - m);
    }
    g = group_sum<kLanes>(g);
    gx = group_sum<kLanes>(gx);
    if (lane == 0) {
      stat0[slice] = g;
      stat1[slice] = gx;
    }
    const float shift = -r * g / kSliceLen, scale = -r * r * r * gx / kSliceLen;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      store<kPolicy>(out + base + (j * kLanes + lane) * 4,
                     make_float4(r * b[j].x + scale * (a[j].x - m) + shift,
                                 r * b[j].y + scale * (a[j].y - m) + shift,
                                 r * b[j].z + scale * (a[j].z - m) + shift,
                                 r * b[j].w + scale * (a[j].w - m) + shift));
    }
  }
}

struct Buffers {
  float *x, *dy, *mean, *rstd, *out, *stat0, *stat1, *copy;
  int64_t num_slices;
};

template <typename Launch>
float median_ms(Launch&& launch, cudaEvent_t start, cudaEvent_t end) {
  for (int i = 0; i < 5; ++i) launch();
  std::vector<float> samples;
  for (int i = 0; i < 31; ++i) {
    cudaEventRecord(start);
    for (int k = 0; k < 10; ++k) launch();
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, start, end);
    samples.push_back(ms / 10);
  }
  std::nth_element(samples.begin(), samples.begin() + 15, samples.end());
  return samples[15];
}

template <int kThreads, int kLanes, int kPolicy, bool kBackward>
void time_variant(const Buffers& b, float copy_ms, cudaEvent_t start, cudaEvent_t end) {
  const unsigned grid = static_cast<unsigned>(b.num_slices / (kThreads / kLanes));
  const float ms = median_ms(
      [&] {
        slices_kernel<kThreads, kLanes, kPolicy, kBackward>
            <<<grid, kThreads>>>(b.x, b.dy, b.mean, b.rstd, b.out, b.stat0, b.stat1, b.num_slices);
      },
      start, end);
  const float floor_ms = (kBackward ? 1.5f : 1.f) * copy_ms;
  std::printf("| %s | %d | %d | %d | %s | %.4f | %.4f | %.3f |\n", kBackward ? "backward" : "forward", kThreads,
              kLanes, 32 / kLanes, kPolicyNames[kPolicy], ms, floor_ms, ms / floor_ms);
}

// The first run (dev/VARIANTS.md 48) tried CTAs of 32 to 256 threads and 8 lanes a slice too: no
// better than 256 threads, 32 or 16 lanes.
template <bool kBackward>
void time_policies(const Buffers& b, float copy_ms, cudaEvent_t start, cudaEvent_t end) {
  time_variant<256, 32, 3, kBackward>(b, copy_ms, start, end);
  time_variant<256, 32, 0, kBackward>(b, copy_ms, start, end);
  time_variant<256, 32, 1, kBackward>(b, copy_ms, start, end);
  time_variant<256, 32, 2, kBackward>(b, copy_ms, start, end);
  time_variant<256, 16, 3, kBackward>(b, copy_ms, start, end);
  time_variant<256, 16, 0, kBackward>(b, copy_ms, start, end);
}

// argv[1]: the batch (default 256: 256x256x16x16, 64 MiB, about the L2's size; 1024 holds 256 MiB,
// so that launches back to back cannot find much of x in L2).
int main(int argc, char** argv) {
  Buffers b{};
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 256;
  b.num_slices = batch * 256;
  const size_t bytes = static_cast<size_t>(b.num_slices) * kSliceLen * sizeof(float);
  for (float** p : {&b.x, &b.dy, &b.out, &b.copy}) CK(cudaMalloc(p, bytes));
  for (float** p : {&b.mean, &b.rstd, &b.stat0, &b.stat1}) CK(cudaMalloc(p, b.num_slices * sizeof(float)));
  std::vector<float> host(bytes / sizeof(float));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.f;
  CK(cudaMemcpy(b.x, host.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b.dy, host.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(b.mean, 0, b.num_slices * sizeof(float)));
  CK(cudaMemset(b.rstd, 0, b.num_slices * sizeof(float)));
  cudaEvent_t start, end;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&end));
  const float copy_ms =
      median_ms([&] { cudaMemcpyAsync(b.copy, b.x, bytes, cudaMemcpyDeviceToDevice); }, start, end);
  std::printf("%lldx256x16x16 float32, copy %.4f ms (median of 31 samples of 10 launches)\n\n",
              static_cast<long long>(batch), copy_ms);
  std::printf("| pass | CTA threads | lanes a slice | slices a warp | loads / stores | ms | floor ms | x floor |\n"
              "|---|---|---|---|---|---|---|---|\n");
  time_policies<false>(b, copy_ms, start, end);
  time_policies<true>(b, copy_ms, start, end);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  return 0;
}
