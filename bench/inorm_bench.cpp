// inorm-bench: times inorm against a device-to-device copy of the same tensor, in one process, and
// verifies sampled slices against the float64 oracle.
//
//   inorm-bench                          the seed workload (112x64x512x512 float32, U[0,1))
//   inorm-bench --suite FILE             every case of a suite file (shared/suites/public.json)
//   options: --json FILE (default inorm-bench-results.json), --markdown FILE, --repeats N (>= 20),
//            --warmup N, --variants g11,g0c2,g16c3-global,pipelined (also time forced plans: CTAs
//            per slice, CTAs per SM and exchange of shared_resident, split_pipelined; see
//            dev/VARIANTS.md)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/suite.h"
#include "inorm/inorm.h"
#include "testing/compare.h"
#include "testing/device_data.h"
#include "testing/oracle.h"

#ifndef INORM_GIT_COMMIT
#define INORM_GIT_COMMIT "unknown"
#endif

namespace inorm::bench {
namespace {

using testing::DeviceBuffer;

struct Variant {
  std::string name;  // "" for the planner's own choice
  PlanOptions options;
};

struct Options {
  std::string suite;
  std::string json = "inorm-bench-results.json";
  std::string markdown;
  int repeats = 30;
  int warmup = 5;
  std::vector<Variant> variants{Variant{}};
};

struct Row {
  std::string id;
  std::string shape;
  std::string dtype;
  std::string layout;
  bool affine = false;
  std::string data;
  std::string path;
  double inorm_ms = 0;
  double copy_ms = 0;
  double gbps = 0;
  bool verified = false;
  double max_abs_error = 0;
  std::string note;  // why a case did not run, or what verification found
  double ratio() const { return copy_ms > 0 && inorm_ms > 0 ? inorm_ms / copy_ms : 0; }
};

struct Environment {
  std::string gpu;
  std::string date;
  std::string commit;
  std::string versions;
};

#define BENCH_TRY(expr)                      \
  do {                                       \
    const Status status_ = (expr);           \
    if (!status_.ok()) return status_;       \
  } while (0)

Status cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  return Status(StatusCode::kCudaError, std::string(what) + ": " + cudaGetErrorString(error));
}

double median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

// Slices 0 and last and six between: the oracle checks every element of each.
Status verify_samples(const ForwardParams& p, int64_t slice_len, const std::vector<double>& weight,
                      const std::vector<double>& bias, Row* row) {
  const int64_t slices = p.batch * p.channels;
  std::set<int64_t> picks = {0, slices - 1};
  for (int k = 1; k <= 6; ++k) picks.insert(slices * k / 7);
  row->verified = true;
  for (int64_t slice : picks) {
    std::vector<double> x, y;
    BENCH_TRY(testing::copy_to_host(p.x, p.dtype, slice * slice_len, slice_len, &x));
    BENCH_TRY(testing::copy_to_host(p.y, p.dtype, slice * slice_len, slice_len, &y));
    const testing::SliceStats stats = testing::slice_statistics(x.data(), slice_len, p.eps);
    const int64_t channel = slice % p.channels;
    const double w = weight.empty() ? 1.0 : weight[channel];
    const double b = bias.empty() ? 0.0 : bias[channel];
    std::vector<double> want(slice_len);
    for (int64_t i = 0; i < slice_len; ++i) want[i] = (x[i] - stats.mean) * stats.rstd * w + b;
    const testing::Comparison cmp = testing::compare(y, want, testing::output_tolerance(p.dtype));
    row->max_abs_error = std::max(row->max_abs_error, cmp.max_abs_error);
    if (!cmp.ok()) {
      row->verified = false;
      row->note = "slice " + std::to_string(slice) + ": " + cmp.describe();
    }
  }
  return Status::Ok();
}

Status run_case(const BenchCase& c, const Options& options, cudaStream_t stream, std::vector<Row>* rows) {
  Row base;
  base.id = c.id;
  base.shape = shape_text(c.shape);
  base.dtype = dtype_name(c.dtype);
  base.layout = c.layout_name;
  base.affine = c.affine;
  base.data = c.data;

  ForwardParams p;
  p.dtype = c.dtype;
  p.layout = c.layout;
  p.batch = c.shape[0];
  p.channels = c.shape[1];
  p.spatial_rank = static_cast<int>(c.shape.size()) - 2;
  int64_t slice_len = 1;
  for (int i = 0; i < p.spatial_rank; ++i) slice_len *= p.spatial[i] = c.shape[2 + i];
  const int64_t numel = p.batch * p.channels * slice_len;
  const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(c.dtype);

  if (p.layout != Layout::kContiguous) {
    base.path = "unsupported";
    base.note = validate_forward(p).message();  // names the layout that is not implemented
    rows->push_back(base);
    return Status::Ok();
  }
  testing::DataSpec data;
  BENCH_TRY(testing::parse_data_spec(c.data, &data));
  DeviceBuffer x, y, weight, bias, workspace;
  BENCH_TRY(x.allocate(bytes));
  BENCH_TRY(y.allocate(bytes));
  BENCH_TRY(testing::fill_random(x.get(), c.dtype, numel, data, std::random_device{}()));
  p.x = x.get();
  p.y = y.get();
  std::vector<double> host_weight, host_bias;
  if (c.affine) {
    std::mt19937_64 rng(std::random_device{}());
    std::normal_distribution<double> normal;
    std::vector<double> w(p.channels), b(p.channels);
    for (auto& v : w) v = 1.0 + 0.1 * normal(rng);
    for (auto& v : b) v = 0.1 * normal(rng);
    p.param_dtype = c.dtype;  // a torch module of that dtype holds parameters of that dtype
    BENCH_TRY(weight.allocate(w.size() * dtype_size(p.param_dtype)));
    BENCH_TRY(bias.allocate(b.size() * dtype_size(p.param_dtype)));
    BENCH_TRY(testing::copy_from_host(w, p.param_dtype, weight.get()));
    BENCH_TRY(testing::copy_from_host(b, p.param_dtype, bias.get()));
    BENCH_TRY(testing::copy_to_host(weight.get(), p.param_dtype, 0, p.channels, &host_weight));
    BENCH_TRY(testing::copy_to_host(bias.get(), p.param_dtype, 0, p.channels, &host_bias));
    p.weight = weight.get();
    p.bias = bias.get();
  }

  cudaEvent_t events[4];
  for (cudaEvent_t& e : events) BENCH_TRY(cuda(cudaEventCreate(&e), "cudaEventCreate"));
  for (const Variant& variant : options.variants) {
    Row row = base;
    if (!variant.name.empty()) row.id += "@" + variant.name;
    Plan plan;
    const Status planned = plan_forward(p, &plan, variant.options);
    if (!planned.ok()) {
      row.path = "not planned";
      row.note = planned.message();
      rows->push_back(row);
      continue;
    }
    row.path = plan.describe();
    BENCH_TRY(workspace.allocate(plan.workspace_bytes));
    std::vector<float> copy_ms, inorm_ms;
    for (int i = 0; i < options.warmup + options.repeats; ++i) {
      BENCH_TRY(cuda(cudaEventRecord(events[0], stream), "cudaEventRecord"));
      BENCH_TRY(cuda(cudaMemcpyAsync(p.y, p.x, bytes, cudaMemcpyDeviceToDevice, stream), "copy"));
      BENCH_TRY(cuda(cudaEventRecord(events[1], stream), "cudaEventRecord"));
      BENCH_TRY(cuda(cudaEventRecord(events[2], stream), "cudaEventRecord"));
      BENCH_TRY(launch_forward(plan, p, workspace.get(), stream));
      BENCH_TRY(cuda(cudaEventRecord(events[3], stream), "cudaEventRecord"));
      BENCH_TRY(cuda(cudaStreamSynchronize(stream), "inorm run"));
      if (i < options.warmup) continue;
      float ms = 0;
      BENCH_TRY(cuda(cudaEventElapsedTime(&ms, events[0], events[1]), "cudaEventElapsedTime"));
      copy_ms.push_back(ms);
      BENCH_TRY(cuda(cudaEventElapsedTime(&ms, events[2], events[3]), "cudaEventElapsedTime"));
      inorm_ms.push_back(ms);
    }
    row.copy_ms = median(copy_ms);
    row.inorm_ms = median(inorm_ms);
    row.gbps = 2.0 * static_cast<double>(bytes) / (row.inorm_ms * 1e-3) / 1e9;
    BENCH_TRY(verify_samples(p, slice_len, host_weight, host_bias, &row));
    rows->push_back(row);
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return Status::Ok();
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

void write_json(const std::string& path, const std::vector<Row>& rows, const Environment& env) {
  std::ofstream out(path);
  out << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << std::setprecision(6) << "  {\"id\": \"" << r.id << "\", \"shape\": \"" << r.shape
        << "\", \"dtype\": \"" << r.dtype << "\", \"layout\": \"" << r.layout
        << "\", \"affine\": " << (r.affine ? "true" : "false") << ", \"data\": \"" << r.data
        << "\", \"inorm_ms\": " << r.inorm_ms << ", \"copy_ms\": " << r.copy_ms
        << ", \"ratio_to_copy\": " << r.ratio() << ", \"gbps\": " << r.gbps << ", \"path\": \""
        << json_escape(r.path) << "\", \"verified\": " << (r.verified ? "true" : "false")
        << ", \"max_abs_error\": " << r.max_abs_error << ", \"note\": \"" << json_escape(r.note)
        << "\", \"gpu\": \"" << env.gpu << "\", \"date\": \"" << env.date << "\", \"commit\": \""
        << env.commit << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "]\n";
}

std::string table(const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "| id | shape | dtype | layout | inorm ms | copy ms | x copy | GB/s | verified | path |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    out << "| " << r.id << " | " << r.shape << " | " << r.dtype << " | " << r.layout << " | ";
    if (r.inorm_ms > 0) {
      out << std::fixed << std::setprecision(3) << r.inorm_ms << " | " << r.copy_ms << " | "
          << std::setprecision(2) << r.ratio() << " | " << std::setprecision(0) << r.gbps << " | "
          << (r.verified ? "yes" : "NO: " + r.note) << " | " << r.path << " |\n";
    } else {
      out << "- | - | - | - | no | " << r.path << ": " << r.note << " |\n";
    }
  }
  return out.str();
}

bool parse_variants(const std::string& list, std::vector<Variant>* variants) {
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    Variant v;
    v.name = item;
    int ctas = 0;
    int per_sm = 0;
    // g<CTAs per slice, 0: planner's>[c<CTAs per SM, exactly>][-<exchange>], e.g. g11, g0c3-global
    if (std::sscanf(item.c_str(), "g%dc%d", &ctas, &per_sm) >= 1) {
      v.options.force_path = Path::kSharedResident;
      v.options.force_ctas_per_slice = ctas;
      v.options.force_ctas_per_sm = per_sm;
      const std::size_t dash = item.find('-');
      if (dash != std::string::npos) {
        const std::string exchange = item.substr(dash + 1);
        for (Exchange e : {Exchange::kNone, Exchange::kCluster, Exchange::kGlobal}) {
          if (exchange == exchange_name(e)) v.options.force_exchange = e;  // the names describe() prints
        }
        if (v.options.force_exchange == Exchange::kAuto) return false;
      }
    } else if (item == "pipelined") {
      v.options.force_path = Path::kSplitPipelined;
    } else {
      return false;
    }
    variants->push_back(v);
  }
  return true;
}

int usage(const char* message) {
  std::fprintf(stderr,
               "inorm-bench: %s\nusage: inorm-bench [--suite FILE] [--json FILE] [--markdown FILE] "
               "[--repeats N>=20] [--warmup N] [--variants g11,g0c2,g16c3-global,pipelined,...]\n",
               message);
  return 2;
}

int main_impl(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--suite" && has_value) options.suite = argv[++i];
    else if (arg == "--json" && has_value) options.json = argv[++i];
    else if (arg == "--markdown" && has_value) options.markdown = argv[++i];
    else if (arg == "--repeats" && has_value) options.repeats = std::atoi(argv[++i]);
    else if (arg == "--warmup" && has_value) options.warmup = std::atoi(argv[++i]);
    else if (arg == "--variants" && has_value) {
      if (!parse_variants(argv[++i], &options.variants)) return usage("bad --variants list");
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.repeats < 20) return usage("--repeats must be at least 20 (medians of fewer runs are noise)");

  std::string why;
  if (!testing::cuda_device_available(&why)) {
    std::fprintf(stderr, "inorm-bench: %s; the benchmark needs an NVIDIA GPU (sm_90).\n", why.c_str());
    return 2;
  }
  std::vector<BenchCase> cases{seed_case()};
  if (!options.suite.empty()) {
    const Status loaded = load_suite(options.suite, &cases);
    if (!loaded.ok()) {
      std::fprintf(stderr, "inorm-bench: %s\n", loaded.message().c_str());
      return 2;
    }
  }

  Environment env;
  env.gpu = why;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  env.date = date;
  const char* commit = std::getenv("INORM_COMMIT");
  env.commit = commit != nullptr ? commit : INORM_GIT_COMMIT;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  env.versions = "driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime);
  std::printf("inorm-bench on %s (%s), %s, commit %s\n", env.gpu.c_str(), env.versions.c_str(),
              env.date.c_str(), env.commit.c_str());
  std::printf("median of %d runs after %d warm-up; copy = cudaMemcpyAsync D2D of the same tensor; "
              "GB/s counts x read once and y written once\n\n",
              options.repeats, options.warmup);

  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "inorm-bench: cudaStreamCreate failed\n");
    return 1;
  }
  std::vector<Row> rows;
  bool failed = false;
  for (const BenchCase& c : cases) {
    const std::size_t before = rows.size();
    const Status status = run_case(c, options, stream, &rows);
    if (!status.ok()) {
      std::fprintf(stderr, "inorm-bench: %s: %s\n", c.id.c_str(), status.message().c_str());
      failed = true;
      continue;
    }
    for (std::size_t i = before; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%-22s %-20s %-9s %9.3f ms  copy %8.3f ms  x%5.2f  %6.0f GB/s  %s  %s\n",
                  r.id.c_str(), r.shape.c_str(), r.dtype.c_str(), r.inorm_ms, r.copy_ms, r.ratio(),
                  r.gbps, r.verified ? "verified" : "NOT VERIFIED", r.path.c_str());
      if (r.inorm_ms > 0 && !r.verified) failed = true;
    }
    std::fflush(stdout);
  }
  cudaStreamDestroy(stream);
  const std::string markdown = table(rows);
  std::printf("\n%s", markdown.c_str());
  write_json(options.json, rows, env);
  if (!options.markdown.empty()) {
    std::ofstream out(options.markdown);
    out << "inorm-bench on " << env.gpu << " (" << env.versions << "), " << env.date << ", commit "
        << env.commit << "; median of " << options.repeats << " runs\n\n" << markdown;
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace inorm::bench

int main(int argc, char** argv) { return inorm::bench::main_impl(argc, argv); }
