#include "testing/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace inorm::testing {

Tolerance output_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {1e-5, 1e-5, std::ldexp(1.0, -149), std::ldexp(2.0 - std::ldexp(1.0, -24), 127)};
    case DType::kFloat64:
      return {1e-10, 1e-10, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::infinity()};
    case DType::kFloat16: return {2e-3, 2e-3, std::ldexp(1.0, -24), 65520.0};
    case DType::kBFloat16: return {1e-2, 1e-2, std::ldexp(1.0, -133), std::ldexp(2.0 - std::ldexp(1.0, -8), 127)};
  }
  return {0, 0};
}

std::string Comparison::describe() const {
  std::ostringstream out;
  out << mismatches << " mismatches";
  if (first_bad >= 0) out << ", first at " << first_bad << ": got " << got << ", want " << want;
  out << ", max abs error " << max_abs_error;
  return out.str();
}

Comparison compare(const std::vector<double>& got, const std::vector<double>& want, Tolerance tolerance) {
  return compare_scaled(got, want, {1.0}, static_cast<int64_t>(std::max<std::size_t>(want.size(), 1)), tolerance);
}

Comparison compare_scaled(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& scale, int64_t group, Tolerance tolerance) {
  Comparison result;
  if (got.size() != want.size() || group < 1 || scale.size() * group < want.size()) {
    result.mismatches = static_cast<int64_t>(std::max(got.size(), want.size()));
    return result;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool got_nan = std::isnan(got[i]);
    const bool want_nan = std::isnan(want[i]);
    bool ok = got_nan == want_nan;
    if (ok && !got_nan) {
      const double bound = tolerance.atol * scale[i / group] + tolerance.rtol * std::fabs(want[i]) + tolerance.underflow;
      if (std::isinf(got[i]) && !std::isinf(want[i])) {  // rounded past the dtype's largest value
        ok = std::signbit(got[i]) == std::signbit(want[i]) && std::fabs(want[i]) + bound >= tolerance.overflow;
      } else {
        const double error = got[i] == want[i] ? 0.0 : std::fabs(got[i] - want[i]);  // inf == inf
        result.max_abs_error = std::max(result.max_abs_error, error);
        ok = error <= bound;
      }
    }
    if (!ok) {
      if (result.mismatches == 0) {
        result.first_bad = static_cast<int64_t>(i);
        result.got = got[i];
        result.want = want[i];
      }
      ++result.mismatches;
    }
  }
  return result;
}

}  // namespace inorm::testing
