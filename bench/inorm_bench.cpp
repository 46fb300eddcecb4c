// inorm-bench: times inorm against a device-to-device copy of the same tensor, in one process, and
// verifies sampled slices against the float64 oracle. The floor is the least the pass must move:
// one copy for the forward (x read, y written), 1.5 copies for the backward (x and dy read, dx
// written).
//
//   inorm-bench                          the seed workload (112x64x512x512 float32, U[0,1))
//   inorm-bench --suite FILE             every case of a suite file (shared/suites/public.json)
//   inorm-bench --backward [--suite FILE]  the backward (dy ~ N(0, 1); shared/suites/train.json)
//   inorm-bench --overhead               host time per call on a tiny tensor: plan + launch (plans
//                                        come from the cache), forward(), and a copy
//   inorm-bench --plans [--suite FILE]   each case's plan (and its --variants'), nothing run; without a
//                                        GPU, the plans for an H200's limits
//   options: --json FILE (default inorm-bench-results.json), --markdown FILE, --repeats N (>= 20),
//            --warmup N, --calls K (each timed sample K calls back to back, and K copies, as a
//            network's layers or python -m inorm.bench run them: the time a call),
//            --variants g11,g0c2,g16c3-global,g32c2x4,pipelined,pipelined-lead0.5,
//            pipelined-resident132,pipelined-part32-lead1,pipelined-lead2-evict0,lanes16,lanes0-cta64,cl-kernels,
//            cl-resident2,cl-blocks40,cl-blocks40g2c2,cl-tiles128x32,cl-grid396,cl-evict1,cl-stream0,cl-apply1,
//            cl-cluster12,stagger600,alone8,regv8
//            (also time forced plans: CTAs
//            per slice, CTAs per SM, clusters a slice and exchange of shared_resident; split_pipelined, its lead's
//            slack per CTA, its resident parts a slice, its part's stage in KiB, its L2 hints and its walk back
//            (edits joined by '-'); group_registers' lanes a slice and threads a CTA; channels_last's three kernels,
//            its resident form (at K CTAs an SM; over channel blocks of K channels, their rows
//            over G CTAs, at C an SM), the three
//            kernels' tiles (channels x rows, 0 the planner's), their grid (alone, or -gridK after another
//            channels_last variant, e.g. cl-tiles0x64-grid100000000) and their L2 hints edited, their
//            reduction by tiles (cl-stream0) or streamed in K parts a sample (cl-streamK), the
//            elementwise pass in the streamed kernel or not (cl-apply1, cl-apply0; in K parts:
//            cl-apply1-pK), the cluster form in clusters of K CTAs (cl-clusterK, 0 the fewest),
//            the plan with its groups' first round started K SM cycles apart (staggerK alone for the
//            planner's, -staggerK after another variant), and
//            shared_resident's one CTA a slice at K CTAs an SM, and its register parts' vectors a
//            thread; see dev/VARIANTS.md)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gpu_sleep.h"
#include "bench/suite.h"
#include "inorm/inorm.h"
#include "testing/compare.h"
#include "testing/device_data.h"
#include "testing/params_shape.h"
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
  double split_slack_per_cta = -1;  // >= 0: split_pipelined's lead edited to parts + grid * this
  int split_evict_first = -1;       // 0 or 1: split_pipelined's Plan::evict_first edited to this
  int channels_last_evict_first = -1;  // 0 or 1: the channels_last three kernels' Plan::evict_first edited to this
  int64_t channels_last_grid = 0;   // > 0: a channels_last plan's grid edited to this (at most its items)
  int alone_ctas_per_sm = 0;        // > 0: a shared_resident plan of one CTA a slice edited to this many an SM
                                    // and its grid with it (past the planner's cap; CTAs beyond what fits run
                                    // in waves)
  int stagger_cycles = -1;          // >= 0: Plan::stagger_cycles edited to this where groups of several CTAs
                                    // (shared_resident's, channels_last's clusters) take the slices
};

// The plan a variant times: the planner's, with the variant's edit of split_pipelined's lead or L2
// hints, of the channels_last kernels' grid, or of shared_resident's CTAs an SM where a CTA takes a
// slice.
void edit_plan(const Variant& variant, Plan* plan) {
  if (variant.channels_last_grid > 0 && plan->path == Path::kChannelsLast) {
    const int64_t samples = plan->num_slices * plan->slice_channels / plan->channels;
    const int64_t blocks = (plan->channels + plan->channel_block - 1) / plan->channel_block;
    plan->grid = std::min(variant.channels_last_grid, samples * blocks * plan->parts_per_slice);
  }
  if (variant.channels_last_evict_first >= 0 && plan->path == Path::kChannelsLast &&
      plan->exchange != Exchange::kGlobal) {
    plan->evict_first = variant.channels_last_evict_first == 1;
  }
  if (variant.alone_ctas_per_sm > 0 && plan->path == Path::kSharedResident && plan->exchange == Exchange::kNone) {
    plan->grid = std::min(plan->num_slices, plan->grid / plan->ctas_per_sm * variant.alone_ctas_per_sm);
    plan->ctas_per_sm = variant.alone_ctas_per_sm;
  }
  const bool staggers = (plan->path == Path::kSharedResident && plan->ctas_per_slice > 1) ||
                        (plan->path == Path::kChannelsLast && plan->exchange == Exchange::kCluster);
  if (variant.stagger_cycles >= 0 && staggers) plan->stagger_cycles = variant.stagger_cycles;
  if (plan->path != Path::kSplitPipelined) return;
  if (variant.split_slack_per_cta >= 0) {
    plan->pipeline_lead =
        std::min(plan->num_slices * plan->parts_per_slice,
                 plan->parts_per_slice + static_cast<int64_t>(plan->grid * variant.split_slack_per_cta));
  }
  if (variant.split_evict_first >= 0) plan->evict_first = variant.split_evict_first == 1;
}

struct Options {
  std::string suite;
  std::string json = "inorm-bench-results.json";
  std::string markdown;
  int repeats = 30;
  int warmup = 5;
  bool backward = false;
  bool overhead = false;   // --overhead: host time per call instead of the suite
  bool plans = false;      // --plans: each case's plans, nothing run
  int calls = 1;           // --calls: back-to-back calls (and copies) a timed sample
  std::vector<Variant> variants{Variant{}};
};

struct Row {
  std::string id;
  std::string pass;
  std::string shape;
  std::string dtype;
  std::string layout;
  bool affine = false;
  std::string data;
  std::string activation = "none";
  std::string path;
  double inorm_ms = 0;
  double copy_ms = 0;
  double floor_copies = 1.0;  // the floor in copies of x: 1 forward, 1.5 backward
  double gbps = 0;
  bool verified = false;
  double max_abs_error = 0;
  std::string note;  // why a case did not run, or what verification found
  double floor_ms() const { return floor_copies * copy_ms; }
  double ratio() const { return copy_ms > 0 && inorm_ms > 0 ? inorm_ms / floor_ms() : 0; }
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
std::set<int64_t> sample_slices(int64_t slices) {
  std::set<int64_t> picks = {0, slices - 1};
  for (int k = 1; k <= 6; ++k) picks.insert(slices * k / 7);
  return picks;
}

// Records a sampled slice's comparison in the row.
void record(const testing::Comparison& cmp, int64_t slice, Row* row) {
  row->max_abs_error = std::max(row->max_abs_error, cmp.max_abs_error);
  if (!cmp.ok() && row->verified) {
    row->verified = false;
    row->note = "slice " + std::to_string(slice) + ": " + cmp.describe();
  }
}

// Where z lies within kink_band of relu's or leaky_relu's kink (oracle.h) the side of the derivative
// depends on the rounding of z: both dx values are right, so such elements are not compared (set
// to NaN in both). A slice's channels are channel_len apart, with weights w and biases b.
void skip_kinks(Activation activation, DType dtype, int64_t channel_len, const testing::BackwardResult& want,
                double mean, double rstd, const std::vector<double>& w, const std::vector<double>& b,
                std::vector<double>* got, std::vector<double>* expected) {
  if (!testing::has_kink(activation)) return;
  for (std::size_t c = 0; c < w.size(); ++c) {
    const double band = testing::kink_band(dtype, mean, rstd * w[c], b[c]);
    for (int64_t i = static_cast<int64_t>(c) * channel_len; i < static_cast<int64_t>(c + 1) * channel_len; ++i) {
      if (std::fabs(want.z[i]) < band) (*got)[i] = (*expected)[i] = NAN;
    }
  }
}

// The slices a sample of p has (GroupNorm: groups, else one a channel) and the channels of each.
template <typename Params>
int64_t slices_a_sample(const Params& p) {
  return p.groups > 0 ? p.groups : p.channels;
}

// `channel_len`: elements of a channel (S); a slice spans p.groups's share of the channels
// (GroupNorm), or one.
Status verify_forward_samples(const ForwardParams& p, int64_t channel_len, const std::vector<double>& weight,
                              const std::vector<double>& bias, Row* row) {
  row->verified = true;
  const int64_t groups = slices_a_sample(p);
  const int64_t slice_channels = p.channels / groups;
  const int64_t slice_len = slice_channels * channel_len;
  for (int64_t slice : sample_slices(p.batch * groups)) {
    std::vector<double> x, y;
    BENCH_TRY(testing::copy_slice_to_host(p.x, p.dtype, p.layout, p.channels, slice_channels, channel_len, slice, &x));
    BENCH_TRY(testing::copy_slice_to_host(p.y, p.dtype, p.layout, p.channels, slice_channels, channel_len, slice, &y));
    const testing::SliceStats stats = testing::slice_statistics(x.data(), slice_len, p.eps);
    std::vector<double> want(slice_len);
    for (int64_t i = 0; i < slice_len; ++i) {
      const int64_t channel = slice % groups * slice_channels + i / channel_len;
      const double w = weight.empty() ? 1.0 : weight[channel];
      const double b = bias.empty() ? 0.0 : bias[channel];
      want[i] = testing::activate(p.activation, p.negative_slope, (x[i] - stats.mean) * stats.rstd * w + b);
    }
    record(testing::compare(y, want, testing::output_tolerance(p.dtype)), slice, row);
  }
  return Status::Ok();
}

// dx of sampled slices against the oracle, each slice a problem of one sample and its channels.
Status verify_backward_samples(const BackwardParams& p, int64_t channel_len, const std::vector<double>& weight,
                               const std::vector<double>& bias, Row* row) {
  row->verified = true;
  const int64_t groups = slices_a_sample(p);
  const int64_t slice_channels = p.channels / groups;
  const int64_t slice_len = slice_channels * channel_len;
  for (int64_t slice : sample_slices(p.batch * groups)) {
    std::vector<double> x, dy, dx;
    BENCH_TRY(testing::copy_slice_to_host(p.x, p.dtype, p.layout, p.channels, slice_channels, channel_len, slice, &x));
    BENCH_TRY(testing::copy_slice_to_host(p.dy, p.dtype, p.layout, p.channels, slice_channels, channel_len, slice, &dy));
    BENCH_TRY(testing::copy_slice_to_host(p.dx, p.dtype, p.layout, p.channels, slice_channels, channel_len, slice, &dx));
    std::vector<double> w(slice_channels, 1.0), b(slice_channels, 0.0);
    for (int64_t c = 0; c < slice_channels; ++c) {
      const int64_t channel = slice % groups * slice_channels + c;
      if (!weight.empty()) w[c] = weight[channel];
      if (!bias.empty()) b[c] = bias[channel];
    }
    std::vector<double> saved_mean, saved_rstd;  // what the kernel got; they place the activation's z
    BENCH_TRY(testing::copy_to_host(p.mean, stats_dtype(p.dtype), slice, 1, &saved_mean));
    BENCH_TRY(testing::copy_to_host(p.rstd, stats_dtype(p.dtype), slice, 1, &saved_rstd));
    testing::BackwardProblem problem;
    problem.batch = 1;
    problem.channels = slice_channels;
    problem.groups = 1;
    problem.slice_len = channel_len;
    problem.eps = p.eps;
    problem.x = &x;
    problem.dy = &dy;
    problem.weight = &w;
    problem.bias = &b;
    problem.activation = p.activation;
    problem.negative_slope = p.negative_slope;
    problem.saved_mean = &saved_mean;
    problem.saved_rstd = &saved_rstd;
    testing::BackwardResult want = testing::instance_norm_backward_reference(problem);
    skip_kinks(p.activation, p.dtype, channel_len, want, saved_mean[0], saved_rstd[0], w, b, &dx, &want.dx);
    record(testing::compare_scaled(dx, want.dx, want.dx_scale, slice_len, testing::output_tolerance(p.dtype)), slice,
           row);
  }
  return Status::Ok();
}

// A case's tensors: x from its data spec, and with affine a weight and bias of its dtype (as a
// torch module of that dtype holds them); host copies of the parameters as the device rounds them.
struct Inputs {
  DeviceBuffer x, out, weight, bias;
  std::vector<double> host_weight, host_bias;
  int64_t slice_len = 1;
  int64_t numel = 0;
  std::size_t bytes = 0;
};

Status make_inputs(const BenchCase& c, Inputs* in) {
  const int64_t channels = c.shape[1];  // the shape is N, C, spatial... in every layout
  for (std::size_t i = 2; i < c.shape.size(); ++i) in->slice_len *= c.shape[i];
  in->numel = c.shape[0] * c.shape[1] * in->slice_len;
  in->bytes = static_cast<std::size_t>(in->numel) * dtype_size(c.dtype);
  testing::DataSpec data;
  BENCH_TRY(testing::parse_data_spec(c.data, &data));
  BENCH_TRY(in->x.allocate(in->bytes));
  BENCH_TRY(in->out.allocate(in->bytes));
  BENCH_TRY(testing::fill_random(in->x.get(), c.dtype, in->numel, data, std::random_device{}()));
  if (c.affine) {
    std::mt19937_64 rng(std::random_device{}());
    std::normal_distribution<double> normal;
    std::vector<double> w(channels), b(channels);
    for (auto& v : w) v = 1.0 + 0.1 * normal(rng);
    for (auto& v : b) v = 0.1 * normal(rng);
    BENCH_TRY(in->weight.allocate(w.size() * dtype_size(c.dtype)));
    BENCH_TRY(in->bias.allocate(b.size() * dtype_size(c.dtype)));
    BENCH_TRY(testing::copy_from_host(w, c.dtype, in->weight.get()));
    BENCH_TRY(testing::copy_from_host(b, c.dtype, in->bias.get()));
    BENCH_TRY(testing::copy_to_host(in->weight.get(), c.dtype, 0, channels, &in->host_weight));
    BENCH_TRY(testing::copy_to_host(in->bias.get(), c.dtype, 0, channels, &in->host_bias));
  }
  return Status::Ok();
}

// GPU sleep cycles a microsecond at the busy clock: the highest rate of a few timed sleeps after a
// warm-up sleep (an idle GPU runs a slower clock), measured once.
Status sleep_cycles_per_us(cudaStream_t stream, double* rate) {
  static double known = 0;
  if (known == 0) {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    BENCH_TRY(cuda(cudaEventCreate(&start), "cudaEventCreate"));
    Status status = cuda(cudaEventCreate(&end), "cudaEventCreate");
    if (status.ok()) status = cuda(enqueue_gpu_sleep(50'000'000, stream), "GPU sleep");
    for (int i = 0; i < 5 && status.ok(); ++i) {
      constexpr long long kCycles = 1'000'000;
      float ms = 0;
      status = cuda(cudaEventRecord(start, stream), "cudaEventRecord");
      if (status.ok()) status = cuda(enqueue_gpu_sleep(kCycles, stream), "GPU sleep");
      if (status.ok()) status = cuda(cudaEventRecord(end, stream), "cudaEventRecord");
      if (status.ok()) status = cuda(cudaEventSynchronize(end), "GPU sleep");
      if (status.ok()) status = cuda(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
      if (status.ok() && ms > 0) known = std::max(known, kCycles / (ms * 1e3));
    }
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    if (!status.ok()) return status;
    if (known == 0) return Status(StatusCode::kCudaError, "inorm-bench: the GPU sleep's timing gave no clock rate");
  }
  *rate = known;
  return Status::Ok();
}

// Times `launch` against a copy of x into `scratch` (the same bytes), alternating, and fills the
// row's medians (of options.calls back-to-back calls a sample, the time a call). Each timed sample
// is queued behind a GPU sleep that outlasts its queueing (twice
// the longest the host took to queue a warm-up sample, 20 us at least; measured only while nothing
// sleeps, so a call that waited for the GPU could not lengthen the sleep it waits for), so that the
// events time the GPU alone (bench/gpu_sleep.h).
template <typename Launch>
Status time_against_copy(const void* x, void* scratch, std::size_t bytes, const Options& options,
                         cudaStream_t stream, Launch&& launch, Row* row) {
  double cycles_per_us = 0;
  BENCH_TRY(sleep_cycles_per_us(stream, &cycles_per_us));
  cudaEvent_t events[4];
  for (cudaEvent_t& e : events) BENCH_TRY(cuda(cudaEventCreate(&e), "cudaEventCreate"));
  std::vector<float> copy_ms, inorm_ms;
  Status status;
  double queue_us = 0;  // the host's longest time to queue a warm-up sample
  for (int i = 0; i < options.warmup + options.repeats && status.ok(); ++i) {
    if (i >= options.warmup) {
      status = cuda(enqueue_gpu_sleep(static_cast<long long>(cycles_per_us * std::max(2 * queue_us, 20.0)), stream),
                    "GPU sleep");
    }
    const auto queued = std::chrono::steady_clock::now();
    if (status.ok()) status = cuda(cudaEventRecord(events[0], stream), "cudaEventRecord");
    for (int k = 0; k < options.calls && status.ok(); ++k) {
      status = cuda(cudaMemcpyAsync(scratch, x, bytes, cudaMemcpyDeviceToDevice, stream), "copy");
    }
    if (status.ok()) status = cuda(cudaEventRecord(events[1], stream), "cudaEventRecord");
    if (status.ok()) status = cuda(cudaEventRecord(events[2], stream), "cudaEventRecord");
    for (int k = 0; k < options.calls && status.ok(); ++k) status = launch();
    if (status.ok()) status = cuda(cudaEventRecord(events[3], stream), "cudaEventRecord");
    if (i < options.warmup) {
      queue_us = std::max(queue_us,
                          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - queued).count());
    }
    if (status.ok()) status = cuda(cudaStreamSynchronize(stream), "inorm run");
    if (!status.ok() || i < options.warmup) continue;
    float ms = 0;
    status = cuda(cudaEventElapsedTime(&ms, events[0], events[1]), "cudaEventElapsedTime");
    copy_ms.push_back(ms / static_cast<float>(options.calls));
    if (status.ok()) status = cuda(cudaEventElapsedTime(&ms, events[2], events[3]), "cudaEventElapsedTime");
    inorm_ms.push_back(ms / static_cast<float>(options.calls));
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  if (!status.ok()) return status;
  row->copy_ms = median(copy_ms);
  row->inorm_ms = median(inorm_ms);
  return Status::Ok();
}

template <typename Params>
void fill_shape(const BenchCase& c, Params* p) {
  testing::set_params_shape(c.shape, c.dtype, c.layout, p);
}

Row base_row(const BenchCase& c, const Options& options) {
  Row row;
  row.id = c.id;
  row.pass = options.backward ? "backward" : "forward";
  row.floor_copies = options.backward ? 1.5 : 1.0;
  row.shape = shape_text(c.shape);
  row.dtype = dtype_name(c.dtype);
  row.layout = c.layout_name;
  row.affine = c.affine;
  row.data = c.data;
  row.activation = activation_name(c.activation);
  return row;
}

// The tensors a case's params point at: device buffers when it runs, stand-ins for --plans (the
// planner reads only their alignment and overlap). Null where the case has none.
struct CaseTensors {
  void* x = nullptr;
  void* out = nullptr;  // y (forward) or dx (backward)
  void* weight = nullptr;
  void* bias = nullptr;
  void* dy = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;
};

ForwardParams forward_params(const BenchCase& c, const CaseTensors& t) {
  ForwardParams p;
  fill_shape(c, &p);
  p.x = t.x;
  p.y = t.out;
  p.param_dtype = c.dtype;
  p.weight = t.weight;
  p.bias = t.bias;
  p.activation = c.activation;
  p.negative_slope = c.negative_slope;
  p.groups = c.groups;
  return p;
}

// The backward of the case in train mode (the forward's mean and rstd); with affine, its weight and
// their gradients; its bias only where an activation follows the norm (it recomputes y).
BackwardParams backward_params(const BenchCase& c, const CaseTensors& t) {
  BackwardParams p;
  fill_shape(c, &p);
  p.groups = c.groups;
  p.x = t.x;
  p.dy = t.dy;
  p.dx = t.out;
  p.mean = t.mean;
  p.rstd = t.rstd;
  p.param_dtype = c.dtype;
  if (c.affine) {
    p.weight = t.weight;
    p.dweight = t.dweight;
    p.dbias = t.dbias;
  }
  p.activation = c.activation;
  p.negative_slope = c.negative_slope;
  p.bias = c.activation != Activation::kNone ? t.bias : nullptr;
  return p;
}

// Every variant of a case: planned by plan_fn with the variant's options (and edit), timed against a
// copy of x into `scratch`, GB/s from `tensors_moved` tensors of `bytes`, verified by verify_fn.
template <typename Params, typename PlanFn, typename LaunchFn, typename VerifyFn>
Status time_variants(const Row& base, const Params& p, void* scratch, std::size_t bytes, double tensors_moved,
                     const Options& options, cudaStream_t stream, PlanFn&& plan_fn, LaunchFn&& launch_fn,
                     VerifyFn&& verify_fn, std::vector<Row>* rows) {
  DeviceBuffer workspace;
  for (const Variant& variant : options.variants) {
    Row row = base;
    if (!variant.name.empty()) row.id += "@" + variant.name;
    Plan plan;
    const Status planned = plan_fn(p, &plan, variant.options);
    if (!planned.ok()) {
      row.path = "not planned";
      row.note = planned.message();
      rows->push_back(row);
      continue;
    }
    edit_plan(variant, &plan);
    row.path = plan.describe();
    BENCH_TRY(workspace.allocate(plan.workspace_bytes));
    BENCH_TRY(time_against_copy(p.x, scratch, bytes, options, stream,
                                [&] { return launch_fn(plan, p, workspace.get(), stream); }, &row));
    row.gbps = tensors_moved * static_cast<double>(bytes) / (row.inorm_ms * 1e-3) / 1e9;
    BENCH_TRY(verify_fn(&row));
    rows->push_back(row);
  }
  return Status::Ok();
}

Status run_forward_case(const BenchCase& c, const Options& options, cudaStream_t stream, std::vector<Row>* rows) {
  const Row base = base_row(c, options);
  Inputs in;
  BENCH_TRY(make_inputs(c, &in));
  CaseTensors tensors;
  tensors.x = in.x.get();
  tensors.out = in.out.get();
  tensors.weight = in.weight.get();
  tensors.bias = in.bias.get();
  const ForwardParams p = forward_params(c, tensors);
  return time_variants(
      base, p, p.y, in.bytes, 2.0, options, stream,
      [](const ForwardParams& params, Plan* plan, const PlanOptions& o) { return plan_forward(params, plan, o); },
      launch_forward, [&](Row* row) { return verify_forward_samples(p, in.slice_len, in.host_weight, in.host_bias, row); },
      rows);
}

// The backward of the case in train mode: the forward's mean and rstd, dy ~ N(0, 1), dx, and with
// affine dweight and dbias.
Status run_backward_case(const BenchCase& c, const Options& options, cudaStream_t stream, std::vector<Row>* rows) {
  const Row base = base_row(c, options);
  const BackwardParams shape = backward_params(c, {});
  Inputs in;
  BENCH_TRY(make_inputs(c, &in));
  const int64_t slices = shape.batch * slices_a_sample(shape);
  const std::size_t stats_bytes = static_cast<std::size_t>(slices) * dtype_size(stats_dtype(c.dtype));
  DeviceBuffer dy, mean, rstd, dweight, dbias;
  BENCH_TRY(mean.allocate(stats_bytes));
  BENCH_TRY(rstd.allocate(stats_bytes));
  {  // the forward's statistics, its output into dx's buffer
    ForwardParams f;
    fill_shape(c, &f);
    f.x = in.x.get();
    f.y = in.out.get();
    f.mean = mean.get();
    f.rstd = rstd.get();
    f.groups = c.groups;
    const Status status = forward(f, stream);
    if (status.code() == StatusCode::kUnsupported) {  // the backward then is too: a row, as time_variants writes
      Row row = base;
      row.path = "not planned";
      row.note = status.message();
      rows->push_back(row);
      return Status::Ok();
    }
    BENCH_TRY(status);
  }
  testing::DataSpec normal;
  BENCH_TRY(testing::parse_data_spec("randn", &normal));
  BENCH_TRY(dy.allocate(in.bytes));
  BENCH_TRY(testing::fill_random(dy.get(), c.dtype, in.numel, normal, std::random_device{}()));
  if (c.affine) {
    const std::size_t grad_bytes = static_cast<std::size_t>(shape.channels) * dtype_size(c.dtype);
    BENCH_TRY(dweight.allocate(grad_bytes));
    BENCH_TRY(dbias.allocate(grad_bytes));
  }
  CaseTensors tensors;
  tensors.x = in.x.get();
  tensors.out = in.out.get();
  tensors.weight = in.weight.get();
  tensors.bias = in.bias.get();
  tensors.dy = dy.get();
  tensors.mean = mean.get();
  tensors.rstd = rstd.get();
  tensors.dweight = dweight.get();
  tensors.dbias = dbias.get();
  const BackwardParams p = backward_params(c, tensors);
  return time_variants(
      base, p, p.dx, in.bytes, 3.0, options, stream,
      [](const BackwardParams& params, Plan* plan, const PlanOptions& o) { return plan_backward(params, plan, o); },
      launch_backward,
      [&](Row* row) { return verify_backward_samples(p, in.slice_len, in.host_weight, in.host_bias, row); }, rows);
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
    out << std::setprecision(6) << "  {\"id\": \"" << r.id << "\", \"pass\": \"" << r.pass << "\", \"shape\": \"" << r.shape
        << "\", \"dtype\": \"" << r.dtype << "\", \"layout\": \"" << r.layout
        << "\", \"affine\": " << (r.affine ? "true" : "false") << ", \"data\": \"" << r.data
        << "\", \"activation\": \"" << r.activation
        << "\", \"inorm_ms\": " << r.inorm_ms << ", \"copy_ms\": " << r.copy_ms
        << ", \"floor_ms\": " << r.floor_ms() << ", \"ratio_to_floor\": " << r.ratio()
        << ", \"ratio_to_copy\": " << (r.copy_ms > 0 ? r.inorm_ms / r.copy_ms : 0) << ", \"gbps\": " << r.gbps
        << ", \"path\": \""
        << json_escape(r.path) << "\", \"verified\": " << (r.verified ? "true" : "false")
        << ", \"max_abs_error\": " << r.max_abs_error << ", \"note\": \"" << json_escape(r.note)
        << "\", \"gpu\": \"" << env.gpu << "\", \"date\": \"" << env.date << "\", \"commit\": \""
        << env.commit << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "]\n";
}

std::string table(const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "| id | pass | shape | dtype | layout | inorm ms | copy ms | floor ms | x floor | GB/s | verified | path |\n"
      << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    out << "| " << r.id << " | " << r.pass << " | " << r.shape << " | " << r.dtype << " | " << r.layout << " | ";
    if (r.inorm_ms > 0) {
      out << std::fixed << std::setprecision(3) << r.inorm_ms << " | " << r.copy_ms << " | " << r.floor_ms() << " | "
          << std::setprecision(2) << r.ratio() << " | " << std::setprecision(0) << r.gbps << " | "
          << (r.verified ? "yes" : "NO: " + r.note) << " | " << r.path << " |\n";
    } else {
      out << "- | - | - | - | - | no | " << r.path << ": " << r.note << " |\n";
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
    // Any variant's plan with its groups' first round started K SM cycles apart: -staggerK after
    // it, e.g. cl-cluster0-stagger1200 (staggerK alone: the planner's plan).
    const std::size_t stagger = item.rfind("stagger");
    if (stagger != std::string::npos && (stagger == 0 || item[stagger - 1] == '-')) {
      int end = 0;
      if (std::sscanf(item.c_str() + stagger, "stagger%d%n", &v.stagger_cycles, &end) != 1 || v.stagger_cycles < 0 ||
          stagger + end != item.size()) {
        return false;
      }
      if (stagger == 0) {
        variants->push_back(v);
        continue;
      }
      item.resize(stagger - 1);
    }
    // A channels_last variant's grid edited too: -gridK after it (cl-gridK alone: the planner's plan's).
    const std::size_t grid = item.rfind("-grid");
    if (grid != std::string::npos && item.rfind("cl-", 0) == 0 && item.rfind("cl-grid", 0) != 0) {
      int end = 0;
      if (std::sscanf(item.c_str() + grid, "-grid%" SCNd64 "%n", &v.channels_last_grid, &end) != 1 ||
          v.channels_last_grid <= 0 || grid + end != item.size()) {
        return false;
      }
      item.resize(grid);
    }
    int ctas = 0;
    int per_sm = 0;
    int clusters = 0;
    // g<CTAs per slice, 0: planner's>[c<CTAs per SM, exactly>[x<clusters a slice>]][-<exchange>],
    // e.g. g11, g0c3-global, g32c2x4 (four clusters of eight)
    if (std::sscanf(item.c_str(), "g%dc%dx%d", &ctas, &per_sm, &clusters) >= 1) {
      v.options.force_path = Path::kSharedResident;
      v.options.force_ctas_per_slice = ctas;
      v.options.force_ctas_per_sm = per_sm;
      v.options.force_slice_clusters = clusters;
      const std::size_t dash = item.find('-');
      if (dash != std::string::npos) {
        const std::string exchange = item.substr(dash + 1);
        for (Exchange e : {Exchange::kNone, Exchange::kCluster, Exchange::kGlobal}) {
          if (exchange == exchange_name(e)) v.options.force_exchange = e;  // the names describe() prints
        }
        if (v.options.force_exchange == Exchange::kAuto) return false;
      }
    } else if (item == "pipelined" || item.rfind("pipelined-", 0) == 0) {
      // split_pipelined, with edits joined by '-': the lead's slack per CTA (lead0.5), resident parts
      // a slice (resident132), a part's stage in KiB (part32), its L2 hints off or on (evict0,
      // evict1), its elementwise walk forward or back (back0, back1); e.g. pipelined-part32-lead1,
      // pipelined-lead2-evict0, pipelined-back1-lead1-evict1
      v.options.force_path = Path::kSplitPipelined;
      std::stringstream edits(item.substr(std::strlen("pipelined")));
      std::string edit;
      std::getline(edits, edit, '-');  // the empty text before the first '-'
      while (std::getline(edits, edit, '-')) {
        int part_kib = 0;
        if (std::sscanf(edit.c_str(), "lead%lf", &v.split_slack_per_cta) == 1 && v.split_slack_per_cta >= 0) {
        } else if (std::sscanf(edit.c_str(), "resident%d", &v.options.force_resident_parts) == 1 &&
                   v.options.force_resident_parts >= 0) {
        } else if (std::sscanf(edit.c_str(), "part%d", &part_kib) == 1 && part_kib > 0) {
          v.options.force_part_bytes = part_kib * 1024;
        } else if (edit == "evict0" || edit == "evict1") {
          v.split_evict_first = edit == "evict1" ? 1 : 0;
        } else if (edit == "back0" || edit == "back1") {
          v.options.force_walk_back = edit == "back1" ? 1 : 0;
        } else {
          return false;
        }
      }
    } else if (item == "cl-kernels") {
      v.options.force_exchange = Exchange::kNone;  // channels_last's three kernels
    } else if (std::sscanf(item.c_str(), "cl-cluster%d", &v.options.force_ctas_per_slice) == 1 &&
               v.options.force_ctas_per_slice >= 0) {
      // the cluster form in clusters of K CTAs a sample (0: the fewest), e.g. cl-cluster12
      v.options.force_exchange = Exchange::kCluster;
    } else if (item.rfind("cl-blocks", 0) == 0) {
      // its resident form over channel blocks of whole slices (0: the planner's), optionally each
      // block's rows over g CTAs, at c CTAs an SM, e.g. cl-blocks40, cl-blocks40g2, cl-blocks0g4c2
      const char* text = item.c_str() + std::strlen("cl-blocks");
      char* end = nullptr;
      const auto field = [&](char tag, int* value) {
        if (*text != tag) return true;
        *value = static_cast<int>(std::strtol(text + 1, &end, 10));
        const bool ok = end != text + 1 && *value > 0;
        text = end;
        return ok;
      };
      v.options.force_channel_block = static_cast<int>(std::strtol(text, &end, 10));
      if (end == text || v.options.force_channel_block < 0) return false;
      text = end;
      if (!field('g', &v.options.force_ctas_per_slice) || !field('c', &v.options.force_ctas_per_sm) || *text != '\0' ||
          (v.options.force_channel_block == 0 && v.options.force_ctas_per_slice == 0)) {
        return false;
      }
      v.options.force_exchange = Exchange::kGlobal;
    } else if (item.rfind("cl-resident", 0) == 0) {  // its resident form, cl-resident2: at two CTAs an SM
      v.options.force_exchange = Exchange::kGlobal;
      const std::string per_sm_text = item.substr(std::strlen("cl-resident"));
      if (!per_sm_text.empty() && (std::sscanf(per_sm_text.c_str(), "%d", &v.options.force_ctas_per_sm) != 1 ||
                                   v.options.force_ctas_per_sm < 1)) {
        return false;
      }
    } else if (int end = 0; std::sscanf(item.c_str(), "cl-tiles%dx%" SCNd64 "%n", &v.options.force_channel_block,
                                        &v.options.force_tile_rows, &end) == 2 &&
                            static_cast<std::size_t>(end) == item.size()) {
      // the three kernels' tiles: channels x rows (0: the planner's), e.g. cl-tiles128x32
      v.options.force_exchange = Exchange::kNone;
    } else if (item == "cl-evict0" || item == "cl-evict1") {
      // the three kernels' elementwise pass without or with its evict-first L2 hints
      v.channels_last_evict_first = item == "cl-evict1" ? 1 : 0;
    } else if (std::sscanf(item.c_str(), "cl-stream%d", &v.options.force_stream_parts) == 1 &&
               v.options.force_stream_parts >= 0) {
      // the three kernels' reduction by tiles (cl-stream0) or streamed in K parts a sample
      v.options.force_exchange = Exchange::kNone;
    } else if (item == "cl-apply0" || item == "cl-apply1") {
      // the elementwise pass in its own kernel or, where the reduction streams, in the same one
      v.options.force_stream_applies = item == "cl-apply1" ? 1 : 0;
      v.options.force_exchange = Exchange::kNone;
    } else if (std::sscanf(item.c_str(), "cl-apply1-p%d", &v.options.force_stream_parts) == 1 &&
               v.options.force_stream_parts > 0) {
      // the same kernel in K parts a sample, e.g. cl-apply1-p132
      v.options.force_stream_applies = 1;
      v.options.force_exchange = Exchange::kNone;
    } else if (std::sscanf(item.c_str(), "cl-grid%" SCNd64, &v.channels_last_grid) == 1 && v.channels_last_grid > 0) {
      // the channels_last kernels' CTAs (each strides over the tiles), e.g. cl-grid396
    } else if (std::sscanf(item.c_str(), "alone%d", &v.alone_ctas_per_sm) == 1 && v.alone_ctas_per_sm > 0) {
      // shared_resident's one CTA a slice at this many CTAs an SM, e.g. alone8
    } else if (std::sscanf(item.c_str(), "regv%d", &v.options.force_register_vecs) == 1) {
      // shared_resident's register parts: 8 vectors a thread (the narrow part only) or 12 (the wide
      // one wherever a part is held), the planner's path otherwise, e.g. regv8
    } else if (std::sscanf(item.c_str(), "lanes%d-cta%d", &v.options.force_group_lanes,
                           &v.options.force_group_cta_threads) >= 1) {
      // group_registers' lanes a slice (0: the planner's) and threads a CTA, e.g. lanes16, lanes0-cta64
      v.options.force_path = Path::kGroupRegisters;
    } else {
      return false;
    }
    variants->push_back(v);
  }
  return true;
}

// Host microseconds per call of `calls` back-to-back calls of `call` on `stream` (wall clock around
// them, the stream synchronized before and after), after a warm-up.
template <typename Call>
double host_us_per_call(Call&& call, cudaStream_t stream, Status* status, int calls = 5000) {
  for (int i = 0; i < 200 && status->ok(); ++i) *status = call();
  if (status->ok()) *status = testing::synchronize("warm-up");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls && status->ok(); ++i) *status = call();
  if (status->ok() && cudaStreamSynchronize(stream) != cudaSuccess) *status = testing::synchronize("timed calls");
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
}

// --overhead: what each call costs the host on a 2x8x8x8 float32 tensor, where the kernel is far
// shorter than that: plan_forward (a cache hit after the first call) + launch_forward with a
// workspace the caller keeps, forward() (which also allocates and frees its workspace
// stream-ordered), and cudaMemcpyAsync of the same tensor as the yardstick.
int run_overhead(cudaStream_t stream) {
  ForwardParams p;
  p.batch = 2;
  p.channels = 8;
  p.spatial_rank = 2;
  p.spatial[0] = p.spatial[1] = 8;
  const std::size_t bytes = 2 * 8 * 8 * 8 * sizeof(float);
  testing::DeviceBuffer x, y, mean, rstd, workspace;
  Status status = x.allocate(bytes);
  if (status.ok()) status = y.allocate(bytes);
  if (status.ok()) status = mean.allocate(16 * sizeof(float));
  if (status.ok()) status = rstd.allocate(16 * sizeof(float));
  if (status.ok()) status = testing::fill_random(x.get(), DType::kFloat32, 2 * 8 * 8 * 8, {}, 1);
  p.x = x.get();
  p.y = y.get();
  p.mean = mean.get();
  p.rstd = rstd.get();
  Plan plan;
  if (status.ok()) status = plan_forward(p, &plan);
  if (status.ok()) status = workspace.allocate(plan.workspace_bytes);
  struct Measured {
    const char* call;
    double us;
  };
  std::vector<Measured> measured;
  const auto measure = [&](const char* name, auto&& call) {
    if (status.ok()) measured.push_back({name, host_us_per_call(call, stream, &status)});
  };
  measure("plan_forward + launch_forward", [&] {
    Plan cached;
    const Status planned = plan_forward(p, &cached);
    return planned.ok() ? launch_forward(cached, p, workspace.get(), stream) : planned;
  });
  measure("launch_forward of a kept plan", [&] { return launch_forward(plan, p, workspace.get(), stream); });
  measure("forward (plan, workspace, launch)", [&] { return forward(p, stream); });
  measure("cudaMemcpyAsync D2D (the copy)", [&] {
    const cudaError_t error = cudaMemcpyAsync(y.get(), x.get(), bytes, cudaMemcpyDeviceToDevice, stream);
    return error == cudaSuccess ? Status::Ok()
                                : Status(StatusCode::kCudaError, std::string("cudaMemcpyAsync: ") + cudaGetErrorString(error));
  });
  if (!status.ok()) {
    std::fprintf(stderr, "inorm-bench --overhead: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("host time per call, 5000 back-to-back calls on 2x8x8x8 float32 [%s]:\n", plan.describe().c_str());
  for (const Measured& m : measured) std::printf("  %-36s %7.2f us\n", m.call, m.us);
  return 0;
}

// --plans: each case's plan and its variants', nothing allocated or run: the GPU's plans where
// there is one, else those for an H200's limits (hopper_h200_limits), so the planner's choices can be
// read, and checked by CI, on any machine. 1 where the planner's own plan fails for a case (a forced
// variant may be refused: printed, as the timed runs print it).
int print_plans(const std::vector<BenchCase>& cases, const Options& options, bool on_device) {
  // Stand-ins for the tensors, 1 TiB apart: disjoint, and aligned as cudaMalloc's buffers are.
  const auto stand_in = [](uintptr_t k) { return reinterpret_cast<void*>((k + 1) << 40); };
  const DeviceLimits h200 = hopper_h200_limits();
  bool failed = false;
  for (const BenchCase& c : cases) {
    CaseTensors t;
    t.x = stand_in(0);
    t.out = stand_in(1);
    t.dy = stand_in(2);
    t.mean = stand_in(3);
    t.rstd = stand_in(4);
    if (c.affine) {  // as make_inputs
      t.weight = stand_in(5);
      t.bias = stand_in(6);
      t.dweight = stand_in(7);
      t.dbias = stand_in(8);
    }
    for (const Variant& variant : options.variants) {
      Plan plan;
      Status status;
      if (options.backward) {
        const BackwardParams p = backward_params(c, t);
        status = on_device ? plan_backward(p, &plan, variant.options) : plan_backward(p, h200, &plan, variant.options);
      } else {
        const ForwardParams p = forward_params(c, t);
        status = on_device ? plan_forward(p, &plan, variant.options) : plan_forward(p, h200, &plan, variant.options);
      }
      if (status.ok()) edit_plan(variant, &plan);
      const std::string id = variant.name.empty() ? c.id : c.id + "@" + variant.name;
      std::printf("%-26s %-8s %-20s %-9s %s\n", id.c_str(), options.backward ? "backward" : "forward",
                  shape_text(c.shape).c_str(), dtype_name(c.dtype),
                  status.ok() ? plan.describe().c_str() : ("not planned: " + status.message()).c_str());
      if (!status.ok() && variant.name.empty()) failed = true;
    }
  }
  return failed ? 1 : 0;
}

constexpr const char kUsage[] =
    "usage: inorm-bench [--suite FILE] [--backward] [--overhead] [--plans] [--json FILE] [--markdown FILE]\n"
    "                   [--repeats N>=20] [--warmup N] [--calls K] [--variants g11,g0c2,pipelined,...]\n"
    "  (no --suite)  the seed workload, 112x64x512x512 float32\n"
    "  --suite FILE  every case of a suite file (bench/suites/*.json)\n"
    "  --backward    the backward pass (floor 1.5 copies) instead of the forward (1 copy)\n"
    "  --overhead    host time a call on a tiny tensor\n"
    "  --plans       each case's plan, nothing run (without a GPU: an H200's)\n"
    "  --calls K     K calls back to back a timed sample\n"
    "  --variants    forced plans timed beside the planner's (bench/inorm_bench.cpp's header lists them)\n";

int usage(const char* message) {
  std::fprintf(stderr, "inorm-bench: %s\n%s", message, kUsage);
  return 2;
}

int main_impl(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--suite" && has_value) options.suite = argv[++i];
    else if (arg == "--json" && has_value) options.json = argv[++i];
    else if (arg == "--markdown" && has_value) options.markdown = argv[++i];
    else if (arg == "--repeats" && has_value) options.repeats = std::atoi(argv[++i]);
    else if (arg == "--warmup" && has_value) options.warmup = std::atoi(argv[++i]);
    else if (arg == "--calls" && has_value) options.calls = std::atoi(argv[++i]);
    else if (arg == "--backward") options.backward = true;
    else if (arg == "--overhead") options.overhead = true;
    else if (arg == "--plans") options.plans = true;
    else if (arg == "--variants" && has_value) {
      if (!parse_variants(argv[++i], &options.variants)) return usage("bad --variants list");
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.repeats < 20) return usage("--repeats must be at least 20 (medians of fewer runs are noise)");
  if (options.calls < 1 || options.calls > 1000) return usage("--calls must be 1 to 1000");

  std::vector<BenchCase> cases{seed_case()};
  if (!options.suite.empty()) {
    const Status loaded = load_suite(options.suite, &cases);
    if (!loaded.ok()) {
      std::fprintf(stderr, "inorm-bench: %s\n", loaded.message().c_str());
      return 2;
    }
  }
  std::string why;
  const bool on_device = testing::cuda_device_available(&why);
  if (options.plans) {
    std::printf("inorm-bench --plans: %s\n",
                (on_device ? "the plans on " + why : why + "; the plans for an H200's limits").c_str());
    return print_plans(cases, options, on_device);
  }
  if (!on_device) {
    std::fprintf(stderr, "inorm-bench: %s; the benchmark needs an NVIDIA GPU (sm_90).\n", why.c_str());
    return 2;
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
  const std::string calls_a_run =
      options.calls > 1 ? ", " + std::to_string(options.calls) + " calls back to back a run (the time a call)" : "";
  std::printf("median of %d runs after %d warm-up, each queued behind a GPU sleep (GPU time alone)%s; copy = "
              "cudaMemcpyAsync D2D of the same tensor; floor = %s; GB/s counts %s\n\n",
              options.repeats, options.warmup, calls_a_run.c_str(), options.backward ? "1.5 copies" : "1 copy",
              options.backward ? "x and dy read once and dx written once" : "x read once and y written once");

  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "inorm-bench: cudaStreamCreate failed\n");
    return 1;
  }
  if (options.overhead) {
    const int result = run_overhead(stream);
    cudaStreamDestroy(stream);
    return result;
  }
  std::vector<Row> rows;
  bool failed = false;
  for (const BenchCase& c : cases) {
    const std::size_t before = rows.size();
    const Status status = options.backward ? run_backward_case(c, options, stream, &rows)
                                           : run_forward_case(c, options, stream, &rows);
    if (!status.ok()) {
      std::fprintf(stderr, "inorm-bench: %s: %s\n", c.id.c_str(), status.message().c_str());
      failed = true;
      continue;
    }
    for (std::size_t i = before; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%-22s %-8s %-20s %-9s %9.3f ms  floor %8.3f ms  x%5.2f  %6.0f GB/s  %s  %s\n",
                  r.id.c_str(), r.pass.c_str(), r.shape.c_str(), r.dtype.c_str(), r.inorm_ms, r.floor_ms(), r.ratio(),
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
        << env.commit << "; " << (options.backward ? "backward, floor 1.5 copies" : "forward, floor 1 copy")
        << "; median of " << options.repeats << " runs, each queued behind a GPU sleep" << calls_a_run << "\n\n"
        << markdown;
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace inorm::bench

int main(int argc, char** argv) { return inorm::bench::main_impl(argc, argv); }
