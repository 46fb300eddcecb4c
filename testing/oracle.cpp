#include "testing/oracle.h"

#include <cmath>

namespace inorm::testing {

SliceStats slice_statistics(const double* x, int64_t len, double eps) {
  long double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += x[i];
  const long double mean = sum / len;
  long double m2 = 0;
  for (int64_t i = 0; i < len; ++i) m2 += (x[i] - mean) * (x[i] - mean);
  SliceStats stats;
  stats.mean = static_cast<double>(mean);
  stats.var = static_cast<double>(m2 / len);
  stats.var_unbiased = len > 1 ? static_cast<double>(m2 / (len - 1)) : NAN;
  stats.rstd = 1.0 / std::sqrt(stats.var + eps);
  return stats;
}

ReferenceResult instance_norm_reference(const ReferenceProblem& p) {
  const int64_t slices = p.batch * p.channels;
  const std::vector<double>& x = *p.x;
  ReferenceResult result;
  result.y.resize(x.size());
  if (p.running_mean) result.running_mean = *p.running_mean;
  if (p.running_var) result.running_var = *p.running_var;
  auto weight = [&](int64_t c) { return p.weight ? (*p.weight)[c] : 1.0; };
  auto bias = [&](int64_t c) { return p.bias ? (*p.bias)[c] : 0.0; };

  if (!p.use_input_stats) {
    for (int64_t s = 0; s < slices; ++s) {
      const int64_t c = s % p.channels;
      const double scale = weight(c) / std::sqrt(result.running_var[c] + p.eps);
      for (int64_t i = s * p.slice_len; i < (s + 1) * p.slice_len; ++i) {
        result.y[i] = (x[i] - result.running_mean[c]) * scale + bias(c);
      }
    }
    return result;
  }

  result.mean.resize(slices);
  result.rstd.resize(slices);
  std::vector<double> mean_sum(p.channels, 0.0);
  std::vector<double> var_sum(p.channels, 0.0);
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t c = s % p.channels;
    const double* xs = x.data() + s * p.slice_len;
    const SliceStats stats = slice_statistics(xs, p.slice_len, p.eps);
    result.mean[s] = stats.mean;
    result.rstd[s] = stats.rstd;
    mean_sum[c] += stats.mean;
    var_sum[c] += stats.var_unbiased;
    double* ys = result.y.data() + s * p.slice_len;
    for (int64_t i = 0; i < p.slice_len; ++i) {
      ys[i] = (xs[i] - stats.mean) * stats.rstd * weight(c) + bias(c);
    }
  }
  if (p.running_mean && p.batch > 0) {
    for (int u = 0; u < p.updates; ++u) {
      for (int64_t c = 0; c < p.channels; ++c) {
        result.running_mean[c] =
            (1 - p.momentum) * result.running_mean[c] + p.momentum * mean_sum[c] / p.batch;
        result.running_var[c] =
            (1 - p.momentum) * result.running_var[c] + p.momentum * var_sum[c] / p.batch;
      }
    }
  }
  return result;
}

}  // namespace inorm::testing
