#include "plan_cache.h"

#include <functional>

#include "plan_internal.h"

namespace inorm::detail {

bool PlanKey::operator==(const PlanKey& o) const {
  const PlanOptions& a = options;
  const PlanOptions& b = o.options;
  return device == o.device && same_problem(signature, o.signature) && signature.vector_io == o.signature.vector_io &&
         signature.coaligned == o.signature.coaligned && a.force_path == b.force_path &&
         a.force_ctas_per_slice == b.force_ctas_per_slice && a.force_slice_clusters == b.force_slice_clusters &&
         a.force_ctas_per_sm == b.force_ctas_per_sm &&
         a.max_ctas_per_sm == b.max_ctas_per_sm && a.force_exchange == b.force_exchange &&
         a.force_resident_parts == b.force_resident_parts && a.force_part_bytes == b.force_part_bytes &&
         a.force_walk_back == b.force_walk_back &&
         a.force_register_vecs == b.force_register_vecs &&
         a.force_group_lanes == b.force_group_lanes && a.force_group_cta_threads == b.force_group_cta_threads &&
         a.force_channel_block == b.force_channel_block && a.force_tile_rows == b.force_tile_rows &&
         a.force_stream_parts == b.force_stream_parts && a.force_stream_applies == b.force_stream_applies;
}

std::size_t PlanKeyHash::operator()(const PlanKey& k) const {
  // boost::hash_combine's mixing over the fields that vary most between calls.
  const Plan& sig = k.signature;
  std::size_t h = 0;
  const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(std::hash<int64_t>{}(sig.num_slices));
  mix(std::hash<int64_t>{}(sig.channels));
  mix(std::hash<int64_t>{}(sig.slice_len));
  mix(std::hash<int64_t>{}(sig.slice_channels));
  const unsigned flags = static_cast<unsigned>(sig.pass) | static_cast<unsigned>(sig.dtype) << 1 |
                         static_cast<unsigned>(sig.param_dtype) << 3 | sig.use_input_stats << 5 |
                         sig.update_running_stats << 6 | sig.weight_grads << 7 | sig.writes_output << 8 |
                         sig.vector_io << 9 | sig.coaligned << 10 | static_cast<unsigned>(sig.inputs) << 11 |
                         static_cast<unsigned>(sig.layout) << 13 | static_cast<unsigned>(sig.activation) << 14 | sig.channel_affine << 16;
  mix(flags);
  mix(static_cast<std::size_t>(k.device));
  mix(static_cast<std::size_t>(k.options.force_path) ^ static_cast<std::size_t>(k.options.force_ctas_per_slice) << 8 ^
      static_cast<std::size_t>(k.options.force_ctas_per_sm) << 16 ^
      static_cast<std::size_t>(k.options.max_ctas_per_sm) << 24 ^
      static_cast<std::size_t>(k.options.force_exchange) << 32 ^
      static_cast<std::size_t>(k.options.force_resident_parts + 1) << 40 ^
      static_cast<std::size_t>(k.options.force_walk_back + 1) << 52 ^
      static_cast<std::size_t>(k.options.force_group_lanes) << 56);
  mix(static_cast<std::size_t>(k.options.force_channel_block) ^
      static_cast<std::size_t>(k.options.force_tile_rows) << 16 ^
      static_cast<std::size_t>(k.options.force_part_bytes) << 40 ^
      static_cast<std::size_t>(k.options.force_group_cta_threads) << 24 ^
      static_cast<std::size_t>(k.options.force_register_vecs) << 56 ^
      static_cast<std::size_t>(k.options.force_slice_clusters) << 8 ^
      static_cast<std::size_t>(k.options.force_stream_parts + 1) << 32 ^
      static_cast<std::size_t>(k.options.force_stream_applies + 1) << 48);
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
