// Plans made once and reused: plan_forward / plan_backward for the current device look a plan up by
// everything it depends on before running the planner and the occupancy queries (a PyTorch op plans
// on every call; a cache hit costs a hash and a lock, not a planner run and CUDA queries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "inorm/inorm.h"

namespace inorm::detail {

// What a plan depends on: the device, the signature of its params (plan_signature: pass, shape,
// dtypes, flags and pointer alignment, which plan_slices reads alone) and the options.
struct PlanKey {
  int device = 0;
  Plan signature;
  PlanOptions options;

  bool operator==(const PlanKey& other) const;
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const;
};

// A thread-safe map from PlanKey to Plan holding at most `capacity` plans: when full, an insert
// first drops them all (a workload of more shapes than that plans again, at the planner's cost,
// rather than growing without bound).
class PlanCache {
 public:
  explicit PlanCache(std::size_t capacity) : capacity_(capacity) {}
  bool find(const PlanKey& key, Plan* plan) const;
  void insert(const PlanKey& key, const Plan& plan);
  std::size_t size() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<PlanKey, Plan, PlanKeyHash> plans_;
};

}  // namespace inorm::detail
