// A seeded randomized test of both passes: several hundred random problems per run (rank 1-3
// spatial shapes, N from 0, C, dtype, affine, param dtype, running stats, train or eval mode,
// misaligned views, in place, offset and constant data, the gradients wanted, a forced split path
// now and then), each checked in full against the float64 oracle by run_case at its stated
// tolerances. The seed is printed; a failing case prints how to run it alone:
//   INORM_RANDOM_SEED=<seed> INORM_RANDOM_CASE=<index> inorm_gpu_tests --gtest_filter=GpuRandom.*
// INORM_RANDOM_CASES sets the number of cases (default 300).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "case_runner.h"
#include "expect_case.h"

namespace inorm::testing {
namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : fallback;
}

// Case `index` of the run with `seed`: a function of the two alone, so it can be run again.
Case random_case(uint64_t seed, uint64_t index) {
  std::mt19937_64 rng(seed * 1000003u + index);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  auto chance = [&](int percent) { return pick(100) < percent; };
  Case c;
  c.pass = chance(50) ? Pass::kBackward : Pass::kForward;
  c.dtype = kAllDtypes[pick(4)];
  // The slice length, log-uniform over 1 to 2^18, split over 1 to 3 extents.
  const int rank = 1 + pick(3);
  const int64_t slice_len = static_cast<int64_t>(std::exp2(std::uniform_real_distribution<double>(0.0, 18.0)(rng)));
  std::vector<int64_t> spatial(rank, 1);
  spatial[0] = slice_len;
  for (int d = 1; d < rank; ++d) {
    const int64_t split = 1 + pick(static_cast<int>(std::min<int64_t>(spatial[0], 64)));
    spatial[d] = split;
    spatial[0] = std::max<int64_t>(1, spatial[0] / split);
  }
  const int64_t channels = 1 + pick(chance(20) ? 300 : 12);
  const int64_t batch_choices[] = {0, 1, 1, 2, 3, 4, 5, 8, 16, 33};
  int64_t batch = batch_choices[pick(10)];
  int64_t s = 1;
  for (int64_t e : spatial) s *= e;
  // At most 2^22 elements: the oracle runs on the CPU.
  while (batch > 1 && batch * channels * s > (int64_t{1} << 22)) batch /= 2;
  if (batch * channels * s > (int64_t{1} << 22)) spatial[0] = std::max<int64_t>(1, spatial[0] / 8);
  c.shape = {batch, channels};
  c.shape.insert(c.shape.end(), spatial.begin(), spatial.end());
  s = 1;
  for (int64_t e : spatial) s *= e;

  c.affine = chance(60);
  c.weight_only = c.affine && chance(20);
  c.param_dtype = chance(50) ? DType::kFloat32 : c.dtype;
  const bool eval = s == 1 || chance(20);  // one spatial element: only eval mode has statistics
  if (c.pass == Pass::kForward) {
    c.running = eval ? Running::kEval : (chance(40) ? Running::kUpdate : Running::kNone);
    c.updates = 1 + pick(2);
    c.stats_outputs = chance(70);
  } else {
    c.running = eval ? Running::kEval : Running::kNone;
    c.want_dx = chance(90);
    c.want_weight_grads = chance(70);
  }
  if (chance(30)) c.x_offset = 1 + pick(3);
  if (chance(30)) c.y_offset = 1 + pick(3);
  if (c.pass == Pass::kBackward && chance(15)) c.dx_offset = pick(4);
  c.in_place = chance(10);
  if (c.in_place) c.updates = 1;  // a second forward in place would normalize its own output
  switch (pick(6)) {
    case 0: c.data = DataSpec{}; break;
    case 1: c.data = DataSpec{Distribution::kNormal, 0.0, 1.0}; break;
    case 2: c.data = DataSpec{Distribution::kNormal, 1000.0, 1.0}; break;
    case 3: c.data = DataSpec{Distribution::kNormal, 1e4, 1.0}; break;
    case 4: c.data = DataSpec{Distribution::kUniform, 5.0, 0.0}; break;  // constant slices: variance 0
    default: c.data = DataSpec{Distribution::kNormal, -3.0, 1e-3}; break;  // tiny spread, negative
  }
  // split_pipelined takes any slice; forced only where there is something to compute.
  const bool computes = batch * channels * s > 0 && (c.pass == Pass::kForward || c.want_dx || (c.affine && c.want_weight_grads));
  if (!eval && computes && chance(10)) c.options.force_path = Path::kSplitPipelined;
  return c;
}

TEST(GpuRandom, CasesAgainstTheOracle) {
  INORM_REQUIRE_GPU();
  const uint64_t seed = env_or("INORM_RANDOM_SEED", std::random_device{}());
  const uint64_t count = env_or("INORM_RANDOM_CASES", 300);
  const char* only = std::getenv("INORM_RANDOM_CASE");
  std::printf("GpuRandom: seed %llu, %llu cases\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(only != nullptr ? 1 : count));
  int forward = 0, backward = 0;
  for (uint64_t index = 0; index < count; ++index) {
    if (only != nullptr && index != std::strtoull(only, nullptr, 10)) continue;
    const Case c = random_case(seed, index);
    (c.pass == Pass::kForward ? forward : backward) += 1;
    expect_passes(c, "random case " + std::to_string(index) + " (rerun: INORM_RANDOM_SEED=" + std::to_string(seed) +
                         " INORM_RANDOM_CASE=" + std::to_string(index) + ")");
  }
  std::printf("GpuRandom: %d forward and %d backward cases\n", forward, backward);
}

}  // namespace
}  // namespace inorm::testing
