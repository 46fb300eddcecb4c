// GoogleTest expectations over run_case (case_runner.h), shared by the GPU tests of every pass.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "case_runner.h"

namespace inorm::testing {

inline void expect_passes(const Case& c, const std::string& why) {
  const Outcome outcome = run_case(c);
  std::string failures;
  for (const std::string& f : outcome.failures) failures += "\n  " + f;
  EXPECT_TRUE(outcome.failures.empty()) << why << ": " << pass_name(c.pass) << " " << describe(c) << " ["
                                        << outcome.plan << "] seed " << outcome.seed << failures;
}

// `c` again in place, and three times (without a running-stat update, which would change from run
// to run) with the same bits.
inline void expect_passes_in_place_and_repeated(const Case& c, const std::string& why) {
  Case in_place = c;
  in_place.in_place = true;
  expect_passes(in_place, why + ", in place");
  Case repeated = c;
  if (repeated.running == Running::kUpdate) repeated.running = Running::kNone;
  repeated.bitwise_repeats = 3;
  expect_passes(repeated, why + ", three runs, same bits");
}

inline constexpr DType kAllDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

// A case of `pass` forced onto `path`, with affine parameters (a running-stat update in the
// forward), and every tensor one element off 16-byte alignment, so that vector accesses start at
// ragged heads.
inline Case forced_misaligned_case(Pass pass, std::vector<int64_t> shape, DType dtype, Path path) {
  Case c;
  c.pass = pass;
  c.shape = std::move(shape);
  c.dtype = dtype;
  c.affine = true;
  if (pass == Pass::kForward) c.running = Running::kUpdate;
  c.x_offset = 1;
  c.y_offset = 1;
  c.options.force_path = path;
  c.expect_path = path;
  return c;
}

struct Shape {
  const char* why;
  std::vector<int64_t> shape;
};

}  // namespace inorm::testing
