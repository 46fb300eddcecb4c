// FastDivisor (src/fast_divisor.h): its quotients and remainders against the compiler's, on the
// host path of the same code (the device takes __umul64hi / __umulhi for the 128- and 64-bit
// products; the GPU tests cover it through every channels_last kernel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fast_divisor.h"

namespace inorm::detail {
namespace {

constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
constexpr int kMax32 = std::numeric_limits<int>::max();

// Whether FastDivisor(d) gives n / d, n % d and ceil(n / d) in 64 bits and, where n fits, in 32.
::testing::AssertionResult divides(int64_t d, int64_t n) {
  const FastDivisor by(d);
  const auto fail = [&](const char* what) {
    return ::testing::AssertionFailure() << what << ": n " << n << ", d " << d;
  };
  if (by.quotient(n) != n / d) return fail("quotient");
  if (by.remainder(n) != n % d) return fail("remainder");
  if (n <= kMax64 - d && by.ceil_quotient(n) != (n + d - 1) / d) return fail("ceil_quotient");
  if (n <= kMax32) {
    const int n32 = static_cast<int>(n);
    if (by.quotient(n32) != n / d) return fail("32-bit quotient");
    if (d <= kMax32 && by.remainder(n32) != n % d) return fail("32-bit remainder");
    if (d <= kMax32) {
      const FastDivisor::Split split = by.divmod(n32);
      if (split.quotient != n / d || split.remainder != n % d) return fail("divmod");
    }
    if (d <= kMax32 && n <= kMax32 - d && by.ceil_quotient(n32) != (n + d - 1) / d) return fail("32-bit ceil_quotient");
  }
  return ::testing::AssertionSuccess();
}

// Every dividend up to a few thousand for every small divisor: the planner's blocks, tiles, rows a
// pass and group sizes are small, and the multiplier's rounding shows first where n / d is near an
// integer.
TEST(FastDivisor, SmallDivisorsEveryDividend) {
  for (int64_t d = 1; d <= 1100; ++d) {
    for (int64_t n = 0; n <= 4 * d + 1000; ++n) ASSERT_TRUE(divides(d, n));
  }
}

// The largest dividends of each width, and those just past a multiple of d, where an excess of the
// multiplier would first carry a quotient past its floor: powers of two, their neighbours (l
// changes there), and divisors near the widths' limits (2^31, 2^32: the 32-bit multiplier's end).
TEST(FastDivisor, EdgeDivisorsAndDividends) {
  std::vector<int64_t> divisors = {2, 3, 5, 7, 10, 20, 39, 40, 641, 1000003};
  for (int k = 1; k < 63; ++k) {
    const int64_t p = int64_t{1} << k;
    divisors.push_back(p - 1);
    divisors.push_back(p);
    divisors.push_back(p + 1);
  }
  divisors.push_back(kMax64);
  for (const int64_t d : divisors) {
    for (const int64_t top : {int64_t{kMax32}, kMax64}) {
      for (int64_t k = 0; k < 64; ++k) {
        ASSERT_TRUE(divides(d, top - k));
        const int64_t multiple = (top / d - k) * d;  // a multiple of d at or under top, and its neighbours
        for (const int64_t n : {multiple - 1, multiple, multiple + 1, multiple + d - 1}) {
          if (n >= 0 && n <= top) {
            ASSERT_TRUE(divides(d, n));
          }
        }
      }
    }
  }
}

// Fresh random divisors and dividends of every magnitude (the seed is printed with a failure).
TEST(FastDivisor, RandomPairs) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200000; ++i) {
    const int d_bits = static_cast<int>(rng() % 63) + 1;
    const int n_bits = static_cast<int>(rng() % 63) + 1;
    const int64_t d = std::max<int64_t>(1, static_cast<int64_t>(rng() >> (64 - d_bits)));
    const auto n = static_cast<int64_t>(rng() >> (64 - n_bits));
    ASSERT_TRUE(divides(d, n));
  }
}

}  // namespace
}  // namespace inorm::detail
