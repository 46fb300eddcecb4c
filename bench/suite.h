// Benchmark cases: the embedded seed workload, or a suite file in the format of
// shared/suites/public.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inorm/inorm.h"

namespace inorm::bench {

struct BenchCase {
  std::string id;
  std::vector<int64_t> shape;  // N, C, spatial...
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kContiguous;
  std::string layout_name = "nchw";
  bool affine = false;
  std::string data = "rand";  // see testing::parse_data_spec
  Activation activation = Activation::kNone;  // shared/suites/fused.json's "activation"
  double negative_slope = 0.01;
  // "op": instance_norm, or group_norm with "groups" (fused.json).
  std::string op = "instance_norm";
  int64_t groups = 0;  // group_norm's (ForwardParams.groups, BackwardParams.groups); 0 for instance_norm
};

// The seed: InstanceNorm2d(64) on 112x64x512x512 float32, U[0,1), affine=False.
BenchCase seed_case();

Status load_suite(const std::string& path, std::vector<BenchCase>* cases);

}  // namespace inorm::bench
