// inorm-bench's suite reader (bench/suite.cpp): every suite in bench/suites loads, and a file that
// says anything the reader would not act on is refused with a message that names the case and key,
// rather than timed as some other case than the one it describes.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/suite.h"

namespace inorm::bench {
namespace {

// The suite's text in a file of its own, for load_suite.
class SuiteFile {
 public:
  explicit SuiteFile(const std::string& text) {
    path_ = ::testing::TempDir() + "inorm_suite_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(path_) << text;
  }
  ~SuiteFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string one_case(const std::string& fields) {
  return R"({"about": "test", "cases": [{"id": "c", "shape": [2, 8, 16], "dtype": "float32")" + fields + "}]}";
}

// load_suite's message for the one case with these extra fields ("" when it loads).
std::string refusal(const std::string& fields) {
  const SuiteFile file(one_case(fields));
  std::vector<BenchCase> cases;
  const Status status = load_suite(file.path(), &cases);
  return status.ok() ? "" : status.message();
}

TEST(Suite, EveryShippedSuiteLoads) {
  for (const char* name : {"public", "train", "layouts", "fused", "variants", "variants-backward"}) {
    std::vector<BenchCase> cases;
    const Status status = load_suite(std::string(INORM_SOURCE_DIR) + "/bench/suites/" + name + ".json", &cases);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_FALSE(cases.empty()) << name;
  }
}

TEST(Suite, ReadsEveryField) {
  const SuiteFile file(R"({"cases": [
    {"id": "gn", "op": "group_norm", "groups": 4, "shape": [2, 8, 3, 5, 7], "dtype": "bfloat16", "layout": "nhwc",
     "affine": true, "data": "1000 + randn", "activation": "leaky_relu", "negative_slope": 0.2, "headline": true},
    {"id": "plain", "shape": [1, 3, 9], "dtype": "float64"}]})");
  std::vector<BenchCase> cases;
  ASSERT_TRUE(load_suite(file.path(), &cases).ok());
  ASSERT_EQ(cases.size(), 2u);
  const BenchCase& gn = cases[0];
  EXPECT_EQ(gn.id, "gn");
  EXPECT_EQ(gn.op, "group_norm");
  EXPECT_EQ(gn.groups, 4);
  EXPECT_EQ(gn.shape, (std::vector<int64_t>{2, 8, 3, 5, 7}));
  EXPECT_EQ(gn.dtype, DType::kBFloat16);
  EXPECT_EQ(gn.layout, Layout::kChannelsLast);
  EXPECT_TRUE(gn.affine);
  EXPECT_EQ(gn.data, "1000 + randn");
  EXPECT_EQ(gn.activation, Activation::kLeakyRelu);
  EXPECT_EQ(gn.negative_slope, 0.2);
  // The defaults: torch.nn's InstanceNorm (affine=False) on contiguous U[0,1) data.
  const BenchCase& plain = cases[1];
  EXPECT_EQ(plain.op, "instance_norm");
  EXPECT_EQ(plain.groups, 0);
  EXPECT_EQ(plain.layout, Layout::kContiguous);
  EXPECT_FALSE(plain.affine);
  EXPECT_EQ(plain.data, "rand");
  EXPECT_EQ(plain.activation, Activation::kNone);
}

TEST(Suite, RefusesWhatItWouldNotActOn) {
  EXPECT_EQ(refusal(""), "");
  // A misspelt key would time the case without what it names.
  EXPECT_NE(refusal(R"(, "afine": true)").find("c: unknown key \"afine\""), std::string::npos);
  // "groups" means nothing to instance_norm, "negative_slope" nothing but to leaky_relu.
  EXPECT_NE(refusal(R"(, "groups": 2)").find("\"groups\" needs \"op\": \"group_norm\""), std::string::npos);
  EXPECT_NE(refusal(R"(, "activation": "relu", "negative_slope": 0.1)").find("needs \"activation\": \"leaky_relu\""),
            std::string::npos);
  // Values of the wrong kind: "true" as a string used to read as affine=False.
  EXPECT_NE(refusal(R"(, "affine": "true")").find("\"affine\" must be a boolean"), std::string::npos);
  EXPECT_NE(refusal(R"(, "op": "group_norm", "groups": 2.5)").find("group_norm needs \"groups\" >= 1"),
            std::string::npos);
  EXPECT_NE(refusal(R"(, "op": "group_norm")").find("group_norm needs \"groups\" >= 1"), std::string::npos);
  EXPECT_NE(refusal(R"(, "data": "gauss")").find("c: data: expected"), std::string::npos);
  EXPECT_NE(refusal(R"(, "layout": "nwhc")").find("unknown layout 'nwhc'"), std::string::npos);
  EXPECT_NE(refusal(R"(, "activation": "gelu")").find("unknown activation 'gelu'"), std::string::npos);
}

TEST(Suite, RefusesMalformedCases) {
  const auto load = [](const std::string& text) {
    const SuiteFile file(text);
    std::vector<BenchCase> cases;
    const Status status = load_suite(file.path(), &cases);
    return status.ok() ? std::string() : status.message();
  };
  EXPECT_NE(load(R"({"cases": [{"id": "c", "shape": [2, 8, -16], "dtype": "float32"}]})").find("whole numbers"),
            std::string::npos);
  EXPECT_NE(load(R"({"cases": [{"id": "c", "shape": [2, 8], "dtype": "float32"}]})").find("3 to 5 dimensions"),
            std::string::npos);
  EXPECT_NE(load(R"({"cases": [{"shape": [2, 8, 16], "dtype": "float32"}]})").find("case 0: every case needs"),
            std::string::npos);
  EXPECT_NE(load(R"({"cases": [3]})").find("case 0 is not an object"), std::string::npos);
  EXPECT_NE(load(R"({"case": []})").find("\"cases\" array"), std::string::npos);
  EXPECT_NE(load(R"({"cases": [], "about": "x", "notes": 1})").find("unknown key \"notes\""), std::string::npos);
  EXPECT_NE(load(R"({"cases": [)").find("JSON syntax error"), std::string::npos);
}

}  // namespace
}  // namespace inorm::bench
