// dev scratch (dev/VARIANTS.md 35): the forward's memory skeleton on the seed tensor (112x64x512x512
// float32) against cudaMemcpyAsync: a bulk copy of a tile into shared memory, 16-byte stores out,
// tiles from a counter (in order); then a cluster per slice (dispatch of each slice by the first CTA
// from the counter, an exchange among the cluster's CTAs, two passes of stand-in statistics), by
// cluster size, CTAs per SM and register part (the end of each chunk loaded into registers). The
// outputs equal x (checked). Not library code: built by CI so it keeps compiling (target
// inorm-dev-skeleton), run by hand on a GPU.
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda/ptx>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA error %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

__device__ __forceinline__ void wait_phase(uint64_t* b, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(b, parity)) {}
}

// kMode bits: 1 = exchange (each CTA st.async 16 B to every peer and waits), 2 = dispatch from a
// counter by rank 0 (else each CTA strides), 4 = early grab (rank 0's atomic before the stores),
// 8 = per-CTA counter (independent tiles, no group), 16 = fake stats (two passes over smem).
template <int kMode, int kPrefetchKiB = 0>
__global__ void __launch_bounds__(256) group_skel(const float* x, float* y, int64_t n, int chunk_floats,
                                                  unsigned long long* counter, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full;
  __shared__ uint64_t arrived[2], dispatched[2];
  __shared__ alignas(16) float4 inbox[2][16];
  __shared__ int64_t slot[2];
  __shared__ float red[8];
  cg::cluster_group cluster = cg::this_cluster();
  const bool is_cluster = group > 1;
  const int rank = is_cluster ? (int)cluster.block_rank() : 0;
  const int64_t groups = gridDim.x / group;
  const int64_t slice_floats = (int64_t)chunk_floats * group;
  const int64_t slices = n / slice_floats;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&full, 1);
    for (int i = 0; i < 2; ++i) { cuda::ptx::mbarrier_init(&arrived[i], 1); cuda::ptx::mbarrier_init(&dispatched[i], 1); }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  if (is_cluster) cluster.sync(); else __syncthreads();
  int64_t s = (kMode & 8) ? blockIdx.x : blockIdx.x / group;
  const int64_t total = (kMode & 8) ? slices * group : slices;
  for (int round = 0; s < total; ++round) {
    const int64_t off = (kMode & 8) ? s * chunk_floats : s * slice_floats + (int64_t)rank * chunk_floats;
    const uint32_t bytes = chunk_floats * 4;
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &full, bytes);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem, x + off, bytes, &full);
    }
    wait_phase(&full, round & 1);
    const float4* src = reinterpret_cast<const float4*>(smem);
    float scale = 1.f;
    if (kMode & 16) {
      float acc = 0.f;
      for (int i = threadIdx.x; i < chunk_floats / 4; i += 256) { float4 v = src[i]; acc += v.x + v.y + v.z + v.w; }
      for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
      __syncthreads();
      float mean = 0.f;
      for (int w = 0; w < 8; ++w) mean += red[w];
      mean /= chunk_floats;
      __syncthreads();
      float m2 = 0.f;
      for (int i = threadIdx.x; i < chunk_floats / 4; i += 256) {
        float4 v = src[i];
        m2 += (v.x - mean) * (v.x - mean) + (v.y - mean) * (v.y - mean) + (v.z - mean) * (v.z - mean) + (v.w - mean) * (v.w - mean);
      }
      for (int o = 16; o; o >>= 1) m2 += __shfl_xor_sync(~0u, m2, o);
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m2;
      __syncthreads();
      float t = 0.f;
      for (int w = 0; w < 8; ++w) t += red[w];
      scale = t > 0.f ? 1.f : 2.f;  // keeps the work alive; always 1 for real data
    }
    const int b = round & 1;
    const uint32_t par = (round >> 1) & 1;
    if ((kMode & 1) && is_cluster) {
      if (threadIdx.x == 0) {
        inbox[b][rank] = make_float4(1.f, 0.f, 0.f, 0.f);
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &arrived[b], (group - 1) * 16);
        uint32_t w[4] = {0x3f800000u, 0, 0, 0};
        for (int r = 0; r < group; ++r) {
          if (r == rank) continue;
          cuda::ptx::st_async(reinterpret_cast<uint32_t(*)[4]>(cluster.map_shared_rank(&inbox[b][rank], r))[0], w, cluster.map_shared_rank(&arrived[b], r));
        }
      }
      wait_phase(&arrived[b], par);
      float sum = 0.f;
      for (int r = 0; r < group; ++r) sum += inbox[b][r].x;
      scale *= sum / group;
    }
    int64_t early = 0;
    if ((kMode & 4) && threadIdx.x == 0 && rank == 0) {
      early = ((kMode & 8) ? gridDim.x : groups) + (int64_t)cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*counter).fetch_add(1ull, cuda::memory_order_relaxed);
      if (kPrefetchKiB > 0) {
        const int64_t nb = (kMode & 8) ? early * chunk_floats : early * slice_floats;
        if (nb < n) {
          for (int r = 0; r < ((kMode & 8) ? 1 : group); ++r) {
            const float* p = x + nb + (int64_t)r * chunk_floats;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(kPrefetchKiB * 1024) : "memory");
          }
        }
      }
    }
    float4* dst = reinterpret_cast<float4*>(y + off);
    for (int i = threadIdx.x; i < chunk_floats / 4; i += 256) {
      float4 v = src[i];
      v.x *= scale; v.y *= scale; v.z *= scale; v.w *= scale;
      __stcg(dst + i, v);
    }
    int64_t next;
    if (kMode & 8) {
      if (threadIdx.x == 0) slot[b] = (kMode & 4) ? early : gridDim.x + (int64_t)cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*counter).fetch_add(1ull, cuda::memory_order_relaxed);
      __syncthreads();
      next = slot[b];
    } else if (kMode & 2) {
      if (threadIdx.x == 0) {
        if (rank == 0) {
          const int64_t v = (kMode & 4) ? early : groups + (int64_t)cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*counter).fetch_add(1ull, cuda::memory_order_relaxed);
          slot[b] = v;
          for (int r = 1; r < group; ++r) cuda::ptx::st_async(cluster.map_shared_rank(&slot[b], r), v, cluster.map_shared_rank(&dispatched[b], r));
        }
        if (is_cluster) cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &dispatched[b], rank == 0 ? 0u : 8u);
      }
      if (is_cluster) wait_phase(&dispatched[b], par); else __syncthreads();
      next = slot[b];
    } else {
      next = s + groups;
    }
    __syncthreads();
    s = next;
  }
  if (is_cluster) cluster.sync();
}

// The chunk split: the first `smem_floats` by one bulk copy into shared memory, the tail of
// kThreads * kRegVec float4 in registers (loaded while the bulk copy flies). Cluster per slice,
// dispatch by rank 0 from a counter (early: at the exchange), exchange, fake statistics.
template <int kThreads, int kRegVec, bool kEarly>
__global__ void __launch_bounds__(kThreads) reg_skel(const float* x, float* y, int64_t n, int smem_floats,
                                                     unsigned long long* counter, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full;
  __shared__ uint64_t arrived[2], dispatched[2];
  __shared__ alignas(16) float4 inbox[2][16];
  __shared__ int64_t slot[2];
  __shared__ float red[kThreads / 32];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int64_t groups = gridDim.x / group;
  const int chunk_floats = smem_floats + kThreads * kRegVec * 4;
  const int64_t slice_floats = (int64_t)chunk_floats * group;
  const int64_t slices = n / slice_floats;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&full, 1);
    for (int i = 0; i < 2; ++i) { cuda::ptx::mbarrier_init(&arrived[i], 1); cuda::ptx::mbarrier_init(&dispatched[i], 1); }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  cluster.sync();
  int64_t s = blockIdx.x / group;
  for (int round = 0; s < slices; ++round) {
    const int64_t off = s * slice_floats + (int64_t)rank * chunk_floats;
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &full, smem_floats * 4);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_shared, cuda::ptx::space_global, smem, x + off, smem_floats * 4, &full);
    }
    const float4* tail = reinterpret_cast<const float4*>(x + off + smem_floats);
    float4 r[kRegVec > 0 ? kRegVec : 1];
#pragma unroll
    for (int k = 0; k < kRegVec; ++k) r[k] = __ldcg(tail + k * kThreads + threadIdx.x);
    wait_phase(&full, round & 1);
    const float4* src = reinterpret_cast<const float4*>(smem);
    float acc = 0.f;
    for (int i = threadIdx.x; i < smem_floats / 4; i += kThreads) { float4 v = src[i]; acc += v.x + v.y + v.z + v.w; }
#pragma unroll
    for (int k = 0; k < kRegVec; ++k) acc += r[k].x + r[k].y + r[k].z + r[k].w;
    for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
    __syncthreads();
    float mean = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) mean += red[w];
    mean /= chunk_floats;
    __syncthreads();
    float m2 = 0.f;
    for (int i = threadIdx.x; i < smem_floats / 4; i += kThreads) {
      float4 v = src[i];
      m2 += (v.x - mean) * (v.x - mean) + (v.y - mean) * (v.y - mean) + (v.z - mean) * (v.z - mean) + (v.w - mean) * (v.w - mean);
    }
#pragma unroll
    for (int k = 0; k < kRegVec; ++k) {
      float4 v = r[k];
      m2 += (v.x - mean) * (v.x - mean) + (v.y - mean) * (v.y - mean) + (v.z - mean) * (v.z - mean) + (v.w - mean) * (v.w - mean);
    }
    for (int o = 16; o; o >>= 1) m2 += __shfl_xor_sync(~0u, m2, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m2;
    __syncthreads();
    float t = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) t += red[w];
    float scale = t > 0.f ? 1.f : 2.f;
    const int b = round & 1;
    const uint32_t par = (round >> 1) & 1;
    if (threadIdx.x == 0) {
      inbox[b][rank] = make_float4(1.f, 0.f, 0.f, 0.f);
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &arrived[b], (group - 1) * 16);
      uint32_t w[4] = {0x3f800000u, 0, 0, 0};
      for (int q = 0; q < group; ++q) {
        if (q == rank) continue;
        cuda::ptx::st_async(reinterpret_cast<uint32_t(*)[4]>(cluster.map_shared_rank(&inbox[b][rank], q))[0], w, cluster.map_shared_rank(&arrived[b], q));
      }
    }
    wait_phase(&arrived[b], par);
    float sum = 0.f;
    for (int q = 0; q < group; ++q) sum += inbox[b][q].x;
    scale *= sum / group;
    int64_t early = 0;
    if (kEarly && threadIdx.x == 0 && rank == 0)
      early = groups + (int64_t)cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*counter).fetch_add(1ull, cuda::memory_order_relaxed);
    float4* dst = reinterpret_cast<float4*>(y + off);
    for (int i = threadIdx.x; i < smem_floats / 4; i += kThreads) {
      float4 v = src[i];
      v.x *= scale; v.y *= scale; v.z *= scale; v.w *= scale;
      __stcg(dst + i, v);
    }
    float4* dtail = reinterpret_cast<float4*>(y + off + smem_floats);
#pragma unroll
    for (int k = 0; k < kRegVec; ++k) {
      float4 v = r[k];
      v.x *= scale; v.y *= scale; v.z *= scale; v.w *= scale;
      __stcg(dtail + k * kThreads + threadIdx.x, v);
    }
    if (threadIdx.x == 0) {
      if (rank == 0) {
        const int64_t v = kEarly ? early : groups + (int64_t)cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*counter).fetch_add(1ull, cuda::memory_order_relaxed);
        slot[b] = v;
        for (int q = 1; q < group; ++q) cuda::ptx::st_async(cluster.map_shared_rank(&slot[b], q), v, cluster.map_shared_rank(&dispatched[b], q));
      }
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &dispatched[b], rank == 0 ? 0u : 8u);
    }
    wait_phase(&dispatched[b], par);
    const int64_t next = slot[b];
    __syncthreads();
    s = next;
  }
  cluster.sync();
}

__global__ void where(int* sm_of) {
  extern __shared__ unsigned char smem[];
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) sm_of[blockIdx.x] = (int)smid;
  cg::this_cluster().sync();
  (void)smem;
}

__global__ void fill(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    x[i] = (float)((i * 2654435761u) & 0xffff) / 65536.f;
}
__global__ void count_far(const float* a, const float* b, int64_t n, unsigned long long* bad) {
  unsigned long long c = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    c += a[i] != b[i];
  if (c) atomicAdd(bad, c);
}

int main() {
  const int64_t n = 112LL * 64 * 512 * 512;
  float *x, *y;
  unsigned long long *counter, *bad;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&counter, 8)); CK(cudaMalloc(&bad, 8));
  fill<<<1056, 256>>>(x, n);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto once = [&](const std::function<cudaError_t()>& run) {
    cudaEventRecord(e0); run(); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float t = 0; cudaEventElapsedTime(&t, e0, e1); return t;
  };
  auto time = [&](const std::function<cudaError_t()>& run) -> double {
    cudaError_t err = cudaSuccess;
    for (int i = 0; i < 3; ++i) err = err != cudaSuccess ? err : run();
    std::vector<float> ms;
    for (int i = 0; i < 25; ++i) ms.push_back(once(run));
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err != cudaSuccess) std::printf("  !! %s\n", cudaGetErrorString(err));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  auto memcpy_run = [&] { return cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); };
  double copy = time(memcpy_run);
  std::printf("%-64s %8.3f ms\n", "memcpy", copy);
  auto report = [&](const std::string& name, double ms) {
    cudaMemset(bad, 0, 8);
    count_far<<<1056, 256>>>(y, x, n, bad);
    unsigned long long h = 0; cudaMemcpy(&h, bad, 8, cudaMemcpyDeviceToHost);
    std::printf("%-64s %8.3f ms  %.3fx%s\n", name.c_str(), ms, ms / copy, h ? "  WRONG" : "");
    std::fflush(stdout);
  };
  // kernel, label, group (cluster size; 1 = plain), per-SM CTAs, chunk floats, grid (0 = max resident)
  auto run = [&](auto kernel, const std::string& name, int group, int chunk_floats, int grid) -> int {
    const int smem = chunk_floats * 4;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg{};
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = group; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
    cfg.attrs = &attr; cfg.numAttrs = group > 1 ? 1 : 0;
    cfg.gridDim = dim3(group * 32);
    int clusters = 0, per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem));
    if (group > 1) CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg)); else clusters = per_sm * sms;
    if (grid == 0) grid = clusters * group;
    if (grid > clusters * group) { std::printf("%-64s grid %d > resident %d\n", name.c_str(), grid, clusters * group); return 0; }
    cfg.gridDim = dim3(grid);
    char label[160];
    std::snprintf(label, sizeof label, "%s [c%d %d/SM grid %d tile %dK]", name.c_str(), group, per_sm, grid, smem / 1024);
    report(label, time([&] {
      cudaMemsetAsync(counter, 0, 8);
      return cudaLaunchKernelEx(&cfg, kernel, (const float*)x, y, n, chunk_floats, counter, group);
    }));
    return 0;
  };
  const int k64 = 16384, k48 = 12288;

  // threads, reg vecs, smem floats: the register-tailed cluster of 16 on the seed's 1 MiB slices
  auto run_reg = [&](auto kernel, const std::string& name, int threads, int smem_floats, int tail_floats, int group = 16, int policy = 0) -> int {
    const int smem = smem_floats * 4;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg{};
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = group; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
    cfg.attrs = &attr; cfg.numAttrs = 1;
    cfg.gridDim = dim3(group * 32);
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeClusterSchedulingPolicyPreference, policy));
    int clusters = 0, per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    cfg.gridDim = dim3(group * clusters);
    cudaFuncAttributes fa{};
    cudaFuncGetAttributes(&fa, kernel);
    char label[200];
    std::snprintf(label, sizeof label, "%s [c%d p%d %d thr, %d regs, %d/SM, %d clusters, %dK smem + %dK regs, slice %dK]", name.c_str(), group, policy, threads, fa.numRegs, per_sm, clusters, smem / 1024, tail_floats / 256, (smem_floats + tail_floats) * group / 256);
    report(label, time([&] {
      cudaMemsetAsync(counter, 0, 8);
      return cudaLaunchKernelEx(&cfg, kernel, (const float*)x, y, n, smem_floats, counter, group);
    }));
    return 0;
  };
  {  // where clusters land: CTAs of one cluster on distinct SMs?
    int* sm_of = nullptr;
    CK(cudaMalloc(&sm_of, 4096 * 4));
    for (int group : {16, 8}) {
      CK(cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
      CK(cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      cudaLaunchConfig_t cfg{};
      cfg.blockDim = dim3(256);
      cfg.dynamicSmemBytes = 65536;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = group; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
      cfg.attrs = &attr; cfg.numAttrs = 1;
      cfg.gridDim = dim3(group * 8);
      int clusters = 0;
      CK(cudaOccupancyMaxActiveClusters(&clusters, where, &cfg));
      const int grid = clusters * group;
      cfg.gridDim = dim3(grid);
      CK(cudaLaunchKernelEx(&cfg, where, sm_of));
      CK(cudaDeviceSynchronize());
      std::vector<int> h(grid);
      CK(cudaMemcpy(h.data(), sm_of, grid * 4, cudaMemcpyDeviceToHost));
      int shared_sm = 0;
      for (int c = 0; c < clusters; ++c) {
        std::vector<int> sset(h.begin() + c * group, h.begin() + (c + 1) * group);
        std::sort(sset.begin(), sset.end());
        shared_sm += (std::unique(sset.begin(), sset.end()) - sset.begin()) < group;
      }
      std::printf("placement: %d clusters of %d at 3/SM, %d with two CTAs on one SM\n", clusters, group, shared_sm);
    }
    CK(cudaFree(sm_of));
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::printf("--- pass %d\n", pass + 1);
    run(group_skel<8>, "tiles in order", 1, k64, sms * 3);
    run(group_skel<8>, "tiles in order", 1, k64, 336);
    run(group_skel<8>, "tiles in order, clusters of 16 launch", 16, k64, 0);
    run(group_skel<1 | 16>, "slices strided + exchange + stats", 16, k64, 0);
    run(group_skel<3 | 16>, "slices in order + exchange + stats", 16, k64, 0);
    run(group_skel<7 | 16>, "slices in order early + exchange + stats", 16, k64, 0);
    run(group_skel<7 | 16>, "slices in order early + exchange + stats (768 KiB)", 16, k48, 0);
    run(group_skel<3 | 16>, "slices in order + exchange + stats (512 KiB)", 8, k64, 0);
    run(group_skel<3 | 16>, "slices in order + exchange + stats (256 KiB)", 4, k64, 0);
    run_reg(reg_skel<256, 2, true>, "c16 early, register part", 256, 14336, 2048);
    run_reg(reg_skel<256, 4, false>, "c16 4/SM, register part", 256, 12288, 4096);
    run_reg(reg_skel<512, 0, true>, "c8 2/SM early (768 KiB)", 512, 24576, 0, 8);
    run_reg(reg_skel<512, 4, true>, "c8 2/SM early, register part", 512, 24576, 8192, 8);
    run_reg(reg_skel<512, 2, true>, "c8 2/SM early, register part", 512, 28672, 4096, 8);
  }
  copy = time(memcpy_run);
  std::printf("%-64s %8.3f ms\n", "memcpy again", copy);
  return 0;
}
