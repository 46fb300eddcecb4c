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
        result.y[i] = activate(p.activation, p.negative_slope, (x[i] - result.running_mean[c]) * scale + bias(c));
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
  const int64_t slices = p.batch * p.channels;
  const std::vector<double>& x = *p.x;
  const std::vector<double>& dy = *p.dy;
  BackwardResult result;
  result.dx.resize(x.size());
  result.z.resize(x.size());
  result.dweight.assign(p.channels, 0.0);
  result.dbias.assign(p.channels, 0.0);
  result.dx_scale.resize(slices);
  result.dweight_scale.assign(p.channels, 0.0);
  result.dbias_scale.assign(p.channels, 0.0);
  std::vector<long double> dweight(p.channels, 0.0L), dbias(p.channels, 0.0L);
  const long double n = static_cast<long double>(p.slice_len);
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t c = s % p.channels;
    const double* xs = x.data() + s * p.slice_len;
    const double* dys = dy.data() + s * p.slice_len;
    double mean = 0;
    double rstd = 0;
    if (p.use_input_stats) {
      const SliceStats stats = slice_statistics(xs, p.slice_len, p.eps);
      mean = stats.mean;
      rstd = stats.rstd;
    } else {
      mean = (*p.running_mean)[c];
      rstd = 1.0 / std::sqrt((*p.running_var)[c] + p.eps);
    }
    const double weight = p.weight ? (*p.weight)[c] : 1.0;
    const double bias = p.bias ? (*p.bias)[c] : 0.0;
    double* zs = result.z.data() + s * p.slice_len;
    const double z_center = p.use_input_stats && p.saved_mean ? (*p.saved_mean)[s] : mean;
    const double z_scale = (p.use_input_stats && p.saved_rstd ? (*p.saved_rstd)[s] : rstd) * weight;
    std::vector<double> dz(p.slice_len);
    long double sum_dz = 0, sum_dz_xhat = 0, sum_sq_dz = 0;
    for (int64_t i = 0; i < p.slice_len; ++i) {
      const long double xhat = (xs[i] - static_cast<long double>(mean)) * rstd;
      zs[i] = (xs[i] - z_center) * z_scale + bias;
      dz[i] = activation_gradient(p.activation, p.negative_slope, zs[i], dys[i]);
      sum_dz += dz[i];
      sum_dz_xhat += dz[i] * xhat;
      sum_sq_dz += static_cast<long double>(dz[i]) * dz[i];
      result.dweight_scale[c] += std::fabs(static_cast<double>(dz[i] * xhat));
      result.dbias_scale[c] += std::fabs(dz[i]);
    }
    dweight[c] += sum_dz_xhat;
    dbias[c] += sum_dz;
    const long double k = static_cast<long double>(rstd) * weight;
    result.dx_scale[s] = static_cast<double>(std::fabs(k) * std::sqrt(sum_sq_dz / std::max<long double>(n, 1)));
    double* dxs = result.dx.data() + s * p.slice_len;
    for (int64_t i = 0; i < p.slice_len; ++i) {
      if (!p.use_input_stats) {
        dxs[i] = static_cast<double>(k * dz[i]);
        continue;
      }
      // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dz * weight
      const long double xhat = (xs[i] - static_cast<long double>(mean)) * rstd;
      dxs[i] = static_cast<double>(k * (dz[i] - sum_dz / n - xhat * sum_dz_xhat / n));
    }
  }
  for (int64_t c = 0; c < p.channels; ++c) {
    result.dweight[c] = static_cast<double>(dweight[c]);
    result.dbias[c] = static_cast<double>(dbias[c]);
  }
  return result;
}

}  // namespace inorm::testing
