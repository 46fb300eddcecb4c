// dev reproducer (issue 21): a kernel that cannot be wrong, launched in thread-block clusters whose
// CTAs hold large dynamic shared memory, faults under `compute-sanitizer --tool synccheck` and
// passes without it and under memcheck, racecheck and initcheck. No library code: each CTA only
// writes its own shared memory (plain), or also brings a chunk in by one bulk async copy onto an
// mbarrier (bulk), or also sends 16 bytes into every peer's shared memory with st.async (exchange,
// the library's cluster exchange), then the cluster synchronizes and exits.
//
//   inorm-dev-synccheck-repro MODE CLUSTER SMEM_KIB CLUSTERS
//     MODE plain | bulk | exchange; CLUSTER 0 (no cluster launch: CLUSTERS plain CTAs) or 2..16
//
// Prints "ok" or the CUDA error, exits 0 or 1. Built by CI (target inorm-dev-synccheck-repro), run
// by hand and by scripts/gpu-check.sh's sanitize stage on a GPU.
#include <cooperative_groups.h>

#include <cuda/barrier>
#include <cuda/ptx>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;
enum Mode { kPlain = 0, kBulk = 1, kExchange = 2 };

template <bool kCluster>
__global__ void __launch_bounds__(kThreads) repro_kernel(const float* src, float* dst, int mode, int floats) {
  extern __shared__ __align__(128) float chunk[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ alignas(16) uint4 inbox[16];
  __shared__ uint64_t arrived;
  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::mbarrier_init(&arrived, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  const cg::cluster_group cluster = cg::this_cluster();
  if constexpr (kCluster) {
    cluster.sync();
  } else {
    __syncthreads();
  }
  if (mode == kPlain) {
    for (int i = threadIdx.x; i < floats; i += kThreads) chunk[i] = static_cast<float>(i);
    __syncthreads();
  } else {
    cuda::barrier<cuda::thread_scope_block>::arrival_token token;
    if (threadIdx.x == 0) {
      const uint32_t bytes = static_cast<uint32_t>(floats) * 4u;
      cuda::device::memcpy_async_tx(chunk, src + static_cast<size_t>(blockIdx.x) * floats,
                                    cuda::aligned_size_t<16>(bytes), loaded);
      token = cuda::device::barrier_arrive_tx(loaded, 1, bytes);
    } else {
      token = loaded.arrive();
    }
    loaded.wait(std::move(token));
  }
  if constexpr (kCluster) {
    if (mode == kExchange) {
      const int rank = static_cast<int>(cluster.block_rank());
      const int size = static_cast<int>(cluster.num_blocks());
      if (threadIdx.x == 0) {
        inbox[rank] = make_uint4(rank, 1, 2, 3);
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &arrived, static_cast<uint32_t>((size - 1) * 16));
        uint32_t words[4] = {static_cast<uint32_t>(rank), 1u, 2u, 3u};
        for (int r = 0; r < size; ++r) {
          if (r == rank) continue;
          auto* slot = reinterpret_cast<uint32_t(*)[4]>(cluster.map_shared_rank(&inbox[rank], r));
          cuda::ptx::st_async(*slot, words, cluster.map_shared_rank(&arrived, r));
        }
      }
      while (!cuda::ptx::mbarrier_try_wait_parity(&arrived, 0u)) {
      }
    }
  }
  if (threadIdx.x == 0) dst[blockIdx.x] = chunk[floats - 1] + (mode == kExchange ? static_cast<float>(inbox[0].y) : 0.f);
  if constexpr (kCluster) cluster.sync();  // no CTA exits while a peer may address its shared memory
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s plain|bulk|exchange CLUSTER(0|2..16) SMEM_KIB CLUSTERS\n", argv[0]);
    return 2;
  }
  const std::string mode_name = argv[1];
  const int mode = mode_name == "plain" ? kPlain : mode_name == "bulk" ? kBulk : mode_name == "exchange" ? kExchange : -1;
  const int cluster = std::atoi(argv[2]);
  const int smem = std::atoi(argv[3]) * 1024;
  const int clusters = std::atoi(argv[4]);
  if (mode < 0 || cluster == 1 || cluster > 16 || smem <= 0 || clusters <= 0 || (mode == kExchange && cluster == 0)) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const int ctas = clusters * (cluster > 0 ? cluster : 1);
  const int floats = smem / 4;
  float *src = nullptr, *dst = nullptr;
  auto check = [](cudaError_t error, const char* what) {
    if (error == cudaSuccess) return true;
    std::printf("%s: %s\n", what, cudaGetErrorName(error));
    return false;
  };
  if (!check(cudaMalloc(&src, static_cast<size_t>(ctas) * smem), "cudaMalloc") ||
      !check(cudaMalloc(&dst, static_cast<size_t>(ctas) * 4), "cudaMalloc") ||
      !check(cudaMemset(src, 0, static_cast<size_t>(ctas) * smem), "cudaMemset")) {
    return 1;
  }
  const void* kernel = cluster > 0 ? reinterpret_cast<const void*>(&repro_kernel<true>)
                                   : reinterpret_cast<const void*>(&repro_kernel<false>);
  if (!check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem attribute") ||
      (cluster > 8 && !check(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                             "non-portable clusters"))) {
    return 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(smem);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = cluster > 0 ? 1 : 0;
  const cudaError_t launched = cluster > 0 ? cudaLaunchKernelEx(&config, repro_kernel<true>, src, dst, mode, floats)
                                           : cudaLaunchKernelEx(&config, repro_kernel<false>, src, dst, mode, floats);
  if (!check(launched, "launch")) return 1;
  const cudaError_t synced = cudaDeviceSynchronize();
  if (!check(synced, "kernel")) return 1;
  std::printf("ok: %s, cluster %d, %d KiB a CTA, %d CTAs\n", mode_name.c_str(), cluster, smem / 1024, ctas);
  return 0;
}
