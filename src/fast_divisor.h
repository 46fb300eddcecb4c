// Division by a divisor the host knows, as a multiply-high and a shift (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994; CUTLASS's FastDivmod and CUB's
// internal fast_div_mod take the same path, neither a public API here). The GPU has no integer
// division instruction: the compiler's is about 20 dependent instructions (MUFU.RCP and its
// corrections, a call beside them in 64 bits), and the channels_last kernels' setup ran about 15 a
// warp before their first load (dev/VARIANTS.md 111, 112, 114). Host C++ (the launcher makes them,
// the CPU tests check them) and device code.
#pragma once

#include <cstdint>

#include "config.h"  // INORM_HOST_DEVICE

namespace inorm::detail {

// n / d and n % d for a divisor d >= 1: exact for every n in [0, 2^63) as int64_t, and for every
// n in [0, 2^31) as int (its remainder where d < 2^31). With l = ceil(log2 d), the multipliers are
// ceil(2^(63 + l) / d) and ceil(2^(31 + l) / d) (each under 2^64, 2^32), so q = (n * m) >> (63 + l)
// (resp. 31 + l): the multiplier's excess over 2^(63 + l) / d is under 1, so n's is under
// n / 2^(63 + l) < 2^-l <= 1 / d, too little to carry n / d past its floor. d = 1 (l = 0, a shift
// of -1) returns n.
struct FastDivisor {
  int64_t divisor = 1;
  uint64_t multiplier = 0;
  uint32_t multiplier32 = 0;  // 0 past d = 2^32, where every int quotient is 0
  int shift = 0;               // l - 1, where d > 1
  int shift32 = 0;             // the same, at most 31

  FastDivisor() = default;
  // Host only: the multiplier is a 128-bit division. d < 1 is the caller's error (it gives d = 1).
  explicit FastDivisor(int64_t d) {
    if (d <= 1) return;
    divisor = d;
    int l = 0;
    while ((uint64_t{1} << l) < static_cast<uint64_t>(d)) ++l;  // l <= 63
    const auto ud = static_cast<unsigned __int128>(d);
    multiplier = static_cast<uint64_t>(((static_cast<unsigned __int128>(1) << (63 + l)) + ud - 1) / ud);
    if (l <= 32) {
      const auto ud64 = static_cast<uint64_t>(d);
      multiplier32 = static_cast<uint32_t>(((uint64_t{1} << (31 + l)) + ud64 - 1) / ud64);
    }
    shift = l - 1;
    shift32 = l <= 32 ? l - 1 : 31;
  }

  INORM_HOST_DEVICE int64_t quotient(int64_t n) const {
    if (divisor == 1) return n;
#ifdef __CUDA_ARCH__
    const uint64_t high = __umul64hi(static_cast<uint64_t>(n), multiplier);
#else
    const auto high = static_cast<uint64_t>((static_cast<unsigned __int128>(n) * multiplier) >> 64);
#endif
    return static_cast<int64_t>(high >> shift);
  }
  INORM_HOST_DEVICE int quotient(int n) const {
    if (divisor == 1) return n;
#ifdef __CUDA_ARCH__
    const uint32_t high = __umulhi(static_cast<uint32_t>(n), multiplier32);
#else
    const auto high = static_cast<uint32_t>((static_cast<uint64_t>(n) * multiplier32) >> 32);
#endif
    return static_cast<int>(high >> shift32);
  }
  INORM_HOST_DEVICE int64_t remainder(int64_t n) const { return n - quotient(n) * divisor; }
  INORM_HOST_DEVICE int remainder(int n) const { return divmod(n).remainder; }
  // n / d and n % d from one quotient (n in [0, 2^31), d < 2^31).
  struct Split {
    int quotient, remainder;
  };
  INORM_HOST_DEVICE Split divmod(int n) const {
    const int q = quotient(n);
    return {q, n - q * static_cast<int>(divisor)};
  }
  // ceil(n / d) for n in [0, 2^63 - d] (resp. [0, 2^31 - d], d < 2^31).
  INORM_HOST_DEVICE int64_t ceil_quotient(int64_t n) const { return quotient(n + divisor - 1); }
  INORM_HOST_DEVICE int ceil_quotient(int n) const { return quotient(n + static_cast<int>(divisor) - 1); }
};

}  // namespace inorm::detail
