// What the channels_last dev probes share (cl_cluster_probe.cu, cl_sample_pipeline_probe.cu): a
// 16-byte run of channels as floats, the offset test data, the saved statistics a backward takes,
// the GPU hold that times the GPU alone and the NaN count over a poisoned output. Not library code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

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

// x[sample, row, c] = mu + sigma * N(0, 1), mu and sigma a (sample, channel) where `offsets` (up to
// 1000 and 0.25-4.25), else N(0, 1) (dy).
template <typename T>
__global__ void fill(T* x, int64_t samples, int64_t rows, int channels, uint32_t seed, bool offsets) {
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
    const float mu = offsets ? static_cast<float>(static_cast<int>(hs % 1501) - 500) : 0.f;
    const float sigma = offsets ? 0.25f + static_cast<float>((hs >> 16) % 400) / 100.f : 1.f;
    x[i] = static_cast<T>(mu + sigma * normal);
  }
}

// A backward's saved statistics, in float64 a thread a (sample, channel), stored as float32.
template <typename T>
__global__ void reference_stats(const T* x, int64_t samples, int64_t rows, int channels, float eps, float* mean,
                                float* rstd) {
  const int64_t slice = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (slice >= samples * channels) return;
  const T* p = x + (slice / channels) * rows * channels + slice % channels;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) sum += static_cast<float>(p[r * channels]);
  const double m = sum / rows;
  double m2 = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double d = static_cast<float>(p[r * channels]) - m;
    m2 += d * d;
  }
  mean[slice] = static_cast<float>(m);
  rstd[slice] = static_cast<float>(1.0 / sqrt(m2 / rows + eps));
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

// The median of 25 timed calls of launch() after 3 warm-ups, CUDA events around each, each queued
// behind a 50 us hold of the GPU; NaN, with the error printed and `failed` set, where a call or the
// events failed.
inline double median_ms(const std::function<cudaError_t()>& launch, bool& failed) {
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cudaError_t err = cudaEventCreate(&e0);
  if (err == cudaSuccess) err = cudaEventCreate(&e1);
  for (int i = 0; i < 3 && err == cudaSuccess; ++i) err = launch();
  std::vector<float> ms;
  for (int i = 0; i < 25 && err == cudaSuccess; ++i) {
    hold<<<1, 1>>>(50000);
    err = cudaEventRecord(e0);
    if (err == cudaSuccess) err = launch();
    if (err == cudaSuccess) err = cudaEventRecord(e1);
    if (err == cudaSuccess) err = cudaEventSynchronize(e1);
    float t = 0.f;
    if (err == cudaSuccess) err = cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t);
  }
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  for (cudaEvent_t e : {e0, e1}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (err != cudaSuccess || ms.empty()) {
    std::printf("  !! %s\n", cudaGetErrorString(err));
    failed = true;
    return NAN;
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}
