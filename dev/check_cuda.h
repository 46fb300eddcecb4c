// The dev probes' CUDA check: prints the error and where, and returns 1 from main.
#pragma once

#include <cstdio>

#define CK(x)                                                                                  \
  do {                                                                                         \
    const cudaError_t e = (x);                                                                 \
    if (e != cudaSuccess) {                                                                    \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__);       \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)
