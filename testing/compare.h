// Elementwise comparison against the float64 oracle with a tolerance per dtype.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "inorm/inorm.h"

namespace inorm::testing {

// |got - want| <= atol + rtol * |want| + underflow; NaN matches only NaN; got = +-inf matches a
// want of that sign within that bound of `overflow`.
struct Tolerance {
  double atol;
  double rtol;
  double underflow = 0;  // the rounding step of the output's subnormals, which no relative bound covers
  double overflow = std::numeric_limits<double>::infinity();  // where rounding to the output dtype gives inf
};
// Outputs rounded to `dtype`, computed in its stats type:
//   float32 1e-5, float64 1e-10, float16 2e-3 (half an ulp is 4.9e-4 relative),
//   bfloat16 1e-2 (half an ulp is 3.9e-3 relative); underflow: the dtype's smallest subnormal
//   (float16 2^-24 = 6e-8: a float16 output of 7e-7 is rounded 4% of its value); overflow: the
//   largest finite value plus half its ulp (float16 65520: a dweight of 143080 is inf in float16).
Tolerance output_tolerance(DType dtype);

struct Comparison {
  int64_t mismatches = 0;
  int64_t first_bad = -1;
  double got = 0;
  double want = 0;
  double max_abs_error = 0;  // over non-NaN pairs
  bool ok() const { return mismatches == 0; }
  std::string describe() const;
};
Comparison compare(const std::vector<double>& got, const std::vector<double>& want, Tolerance tolerance);
// The same with the absolute part measured against the size of the terms that made each value:
// |got - want| <= atol * scale[i / group] + rtol * |want| + underflow (one scale per `group`
// values, e.g. a slice). NaN matches only NaN.
Comparison compare_scaled(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& scale, int64_t group, Tolerance tolerance);

}  // namespace inorm::testing
