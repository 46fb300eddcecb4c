#include "testing/oracle.h"

#include <algorithm>
#include <cmath>

namespace inorm::testing {

double activate(Activation activation, double negative_slope, double z) {
  switch (activation) {
    case Activation::kRelu: return z < 0 ? 0.0 : z;
    case Activation::kLeakyRelu: return z > 0 ? z : z * negative_slope;
    case Activation::kSilu: return z / (1.0 + std::exp(-z));
    default: return z;
  }
}

double activation_gradient(Activation activation, double negative_slope, double z, double dy) {
  switch (activation) {
    case Activation::kRelu: return z <= 0 ? 0.0 : dy;
    case Activation::kLeakyRelu: return z > 0 ? dy : dy * negative_slope;
    case Activation::kSilu: {
      const double s = 1.0 / (1.0 + std::exp(-z));
      return dy * s * (1.0 + z * (1.0 - s));
    }
    default: return dy;
  }
}

double activation_gradient_scale(Activation activation, double negative_slope, double z, double dy) {
  if (activation != Activation::kSilu) return std::fabs(activation_gradient(activation, negative_slope, z, dy));
  const double s = 1.0 / (1.0 + std::exp(-z));
  return std::fabs(dy) * (s + std::fabs(z) * s * (1.0 - s));
}

bool has_kink(Activation activation) {
  return activation == Activation::kRelu || activation == Activation::kLeakyRelu;
}

double kink_band(DType dtype, double mean, double scale, double bias) {
  const double rounding = stats_dtype(dtype) == DType::kFloat64 ? 1e-13 : 1e-6;
  return rounding * (1.0 + std::fabs(mean * scale) + std::fabs(bias));
}

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

namespace {

// The slices of a problem: N * groups of `channels / groups` channels each, `len` elements in all
// (InstanceNorm: groups == channels, a slice is one channel).
struct Slices {
  int64_t count;
  int64_t groups;
  int64_t per_group;  // channels of a slice
  int64_t len;
  // The channel of element i of slice s.
  int64_t channel(int64_t s, int64_t i, int64_t spatial) const { return (s % groups) * per_group + i / spatial; }
};
template <typename Problem>
Slices slices_of(const Problem& p) {
  const int64_t groups = p.groups > 0 ? p.groups : p.channels;
  const int64_t per_group = groups > 0 ? p.channels / groups : 0;
  return Slices{p.batch * groups, groups, per_group, per_group * p.slice_len};
}

}  // namespace

ReferenceResult instance_norm_reference(const ReferenceProblem& p) {
  const Slices slices = slices_of(p);
  const std::vector<double>& x = *p.x;
  ReferenceResult result;
  result.y.resize(x.size());
  if (p.running_mean) result.running_mean = *p.running_mean;
  if (p.running_var) result.running_var = *p.running_var;
  auto weight = [&](int64_t c) { return p.weight ? (*p.weight)[c] : 1.0; };
  auto bias = [&](int64_t c) { return p.bias ? (*p.bias)[c] : 0.0; };

  if (!p.use_input_stats) {  // InstanceNorm only: a slice is a channel
    for (int64_t s = 0; s < slices.count; ++s) {
      const int64_t c = s % p.channels;
      const double scale = weight(c) / std::sqrt(result.running_var[c] + p.eps);
      for (int64_t i = s * p.slice_len; i < (s + 1) * p.slice_len; ++i) {
        result.y[i] = activate(p.activation, p.negative_slope, (x[i] - result.running_mean[c]) * scale + bias(c));
      }
    }
    return result;
  }

  result.mean.resize(slices.count);
  result.rstd.resize(slices.count);
  std::vector<double> mean_sum(p.channels, 0.0);
  std::vector<double> var_sum(p.channels, 0.0);
  for (int64_t s = 0; s < slices.count; ++s) {
    const double* xs = x.data() + s * slices.len;
    const SliceStats stats = slice_statistics(xs, slices.len, p.eps);
    result.mean[s] = stats.mean;
    result.rstd[s] = stats.rstd;
    mean_sum[s % slices.groups] += stats.mean;  // running stats: InstanceNorm only (group g is channel g)
    var_sum[s % slices.groups] += stats.var_unbiased;
    double* ys = result.y.data() + s * slices.len;
    for (int64_t i = 0; i < slices.len; ++i) {
      const int64_t c = slices.channel(s, i, p.slice_len);
      ys[i] = activate(p.activation, p.negative_slope, (xs[i] - stats.mean) * stats.rstd * weight(c) + bias(c));
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

BackwardResult instance_norm_backward_reference(const BackwardProblem& p) {
  const Slices slices = slices_of(p);
  const std::vector<double>& x = *p.x;
  const std::vector<double>& dy = *p.dy;
  BackwardResult result;
  result.dx.resize(x.size());
  result.z.resize(x.size());
  result.dweight.assign(p.channels, 0.0);
  result.dbias.assign(p.channels, 0.0);
  result.dx_scale.resize(slices.count);
  result.dweight_scale.assign(p.channels, 0.0);
  result.dbias_scale.assign(p.channels, 0.0);
  std::vector<long double> dweight(p.channels, 0.0L), dbias(p.channels, 0.0L);
  const long double n = static_cast<long double>(slices.len);
  auto weight = [&](int64_t c) { return p.weight ? (*p.weight)[c] : 1.0; };
  auto bias = [&](int64_t c) { return p.bias ? (*p.bias)[c] : 0.0; };
  std::vector<long double> xhat(slices.len), g(slices.len);
  for (int64_t s = 0; s < slices.count; ++s) {
    const double* xs = x.data() + s * slices.len;
    const double* dys = dy.data() + s * slices.len;
    double mean = 0;
    double rstd = 0;
    if (p.use_input_stats) {
      const SliceStats stats = slice_statistics(xs, slices.len, p.eps);
      mean = stats.mean;
      rstd = stats.rstd;
    } else {  // InstanceNorm only: a slice is a channel
      mean = (*p.running_mean)[s % p.channels];
      rstd = 1.0 / std::sqrt((*p.running_var)[s % p.channels] + p.eps);
    }
    double* zs = result.z.data() + s * slices.len;
    const double z_center = p.use_input_stats && p.saved_mean ? (*p.saved_mean)[s] : mean;
    const double z_rstd = p.use_input_stats && p.saved_rstd ? (*p.saved_rstd)[s] : rstd;
    long double sum_g = 0, sum_g_xhat = 0, sum_sq_g = 0;
    for (int64_t i = 0; i < slices.len; ++i) {
      const int64_t c = slices.channel(s, i, p.slice_len);
      xhat[i] = (xs[i] - static_cast<long double>(mean)) * rstd;
      zs[i] = (xs[i] - z_center) * z_rstd * weight(c) + bias(c);
      const double dz = activation_gradient(p.activation, p.negative_slope, zs[i], dys[i]);
      const double dz_size = activation_gradient_scale(p.activation, p.negative_slope, zs[i], dys[i]);
      g[i] = static_cast<long double>(dz) * weight(c);
      sum_g += g[i];
      sum_g_xhat += g[i] * xhat[i];
      sum_sq_g += static_cast<long double>(dz_size * weight(c)) * (dz_size * weight(c));
      dweight[c] += dz * xhat[i];
      dbias[c] += dz;
      result.dweight_scale[c] += std::fabs(static_cast<double>(dz_size * xhat[i]));
      result.dbias_scale[c] += dz_size;
    }
    result.dx_scale[s] = static_cast<double>(rstd * std::sqrt(sum_sq_g / std::max<long double>(n, 1)));
    double* dxs = result.dx.data() + s * slices.len;
    for (int64_t i = 0; i < slices.len; ++i) {
      // train: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dz * weight; eval: rstd * g
      dxs[i] = static_cast<double>(p.use_input_stats ? rstd * (g[i] - sum_g / n - xhat[i] * sum_g_xhat / n)
                                                     : rstd * g[i]);
    }
  }
  for (int64_t c = 0; c < p.channels; ++c) {
    result.dweight[c] = static_cast<double>(dweight[c]);
    result.dbias[c] = static_cast<double>(dbias[c]);
  }
  return result;
}

}  // namespace inorm::testing
