// Filling a pass's params with a tensor's dtype, layout and NCHW shape, for the tests and the benchmark.
#pragma once

#include <cstdint>
#include <vector>

#include "inorm/inorm.h"

namespace inorm::testing {

// shape: N, C, then 1 to 3 spatial extents (in NCHW order whatever the layout).
template <typename Params>
void set_params_shape(const std::vector<int64_t>& shape, DType dtype, Layout layout, Params* p) {
  p->dtype = dtype;
  p->layout = layout;
  p->batch = shape[0];
  p->channels = shape[1];
  p->spatial_rank = static_cast<int>(shape.size()) - 2;
  for (int i = 0; i < p->spatial_rank; ++i) p->spatial[i] = shape[2 + i];
}

}  // namespace inorm::testing
