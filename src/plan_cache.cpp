#include "plan_cache.h"

#include <functional>

namespace inorm::detail {

bool PlanKey::operator==(const PlanKey& o) const {
  return device == o.device && pass == o.pass && inputs == o.inputs && dtype == o.dtype &&
         param_dtype == o.param_dtype && num_slices == o.num_slices && channels == o.channels &&
         slice_len == o.slice_len && use_input_stats == o.use_input_stats &&
         update_running_stats == o.update_running_stats && weight_grads == o.weight_grads &&
         writes_output == o.writes_output && vector_io == o.vector_io && coaligned == o.coaligned &&
         options.force_path == o.options.force_path &&
         options.force_ctas_per_slice == o.options.force_ctas_per_slice &&
         options.force_ctas_per_sm == o.options.force_ctas_per_sm &&
         options.max_ctas_per_sm == o.options.max_ctas_per_sm &&
         options.force_exchange == o.options.force_exchange;
}

PlanKey plan_key(int device, const Plan& signature, const PlanOptions& options) {
  PlanKey key;
  key.device = device;
  key.pass = signature.pass;
  key.inputs = signature.inputs;
  key.dtype = signature.dtype;
  key.param_dtype = signature.param_dtype;
  key.num_slices = signature.num_slices;
  key.channels = signature.channels;
  key.slice_len = signature.slice_len;
  key.use_input_stats = signature.use_input_stats;
  key.update_running_stats = signature.update_running_stats;
  key.weight_grads = signature.weight_grads;
  key.writes_output = signature.writes_output;
  key.vector_io = signature.vector_io;
  key.coaligned = signature.coaligned;
  key.options = options;
  return key;
}

std::size_t PlanKeyHash::operator()(const PlanKey& k) const {
  // boost::hash_combine's mixing over the fields that vary most between calls.
  std::size_t h = 0;
  const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(std::hash<int64_t>{}(k.num_slices));
  mix(std::hash<int64_t>{}(k.channels));
  mix(std::hash<int64_t>{}(k.slice_len));
  const unsigned flags = static_cast<unsigned>(k.pass) | static_cast<unsigned>(k.dtype) << 1 |
                         static_cast<unsigned>(k.param_dtype) << 3 | k.use_input_stats << 5 |
                         k.update_running_stats << 6 | k.weight_grads << 7 | k.writes_output << 8 |
                         k.vector_io << 9 | k.coaligned << 10 | static_cast<unsigned>(k.inputs) << 11;
  mix(flags);
  mix(static_cast<std::size_t>(k.device));
  mix(static_cast<std::size_t>(k.options.force_path) ^ static_cast<std::size_t>(k.options.force_ctas_per_slice) << 8 ^
      static_cast<std::size_t>(k.options.force_ctas_per_sm) << 16 ^
      static_cast<std::size_t>(k.options.max_ctas_per_sm) << 24 ^
      static_cast<std::size_t>(k.options.force_exchange) << 32);
  return h;
}

bool PlanCache::find(const PlanKey& key, Plan* plan) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = plans_.find(key);
  if (found == plans_.end()) return false;
  *plan = found->second;
  return true;
}

void PlanCache::insert(const PlanKey& key, const Plan& plan) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() >= capacity_ && plans_.count(key) == 0) plans_.clear();
  plans_.insert_or_assign(key, plan);
}

std::size_t PlanCache::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return plans_.size();
}

}  // namespace inorm::detail
