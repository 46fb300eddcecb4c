// The plan cache behind plan_forward / plan_backward for the current device (src/plan_cache.h): a
// plan comes back only for the key it was stored under, every field of the key counts, the cache
// never holds more than its capacity, and concurrent use is safe.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "inorm/inorm.h"
#include "plan_cache.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

Plan signature_for(int64_t slices, int64_t slice_len) {
  ForwardParams params;
  params.x = reinterpret_cast<void*>(0x10000000);
  params.y = reinterpret_cast<void*>(0x20000000);
  params.batch = slices;
  params.channels = 1;
  params.spatial_rank = 1;
  params.spatial[0] = slice_len;
  return plan_signature(params);
}

Plan plan_for(const Plan& signature) {
  Plan plan;
  EXPECT_TRUE(plan_slices(signature, hopper_h200_limits(), {}, &plan).ok());
  return plan;
}

TEST(PlanCache, ReturnsThePlanStoredUnderTheKey) {
  PlanCache cache(16);
  const Plan signature = signature_for(8, 1000);
  const PlanKey key{0, signature, {}};
  Plan found;
  EXPECT_FALSE(cache.find(key, &found));
  const Plan planned = plan_for(signature);
  cache.insert(key, planned);
  ASSERT_TRUE(cache.find(key, &found));
  EXPECT_EQ(found.describe(), planned.describe());
  EXPECT_TRUE(plan_matches(found, signature));
}

// Each field of the key, changed alone, must miss: a plan reused for a different device, shape,
// dtype, flag, alignment or option would launch the wrong kernel or the wrong grid.
TEST(PlanCache, EveryFieldOfTheKeyCounts) {
  const PlanKey base{0, signature_for(8, 1000), {}};
  const std::vector<std::function<void(PlanKey&)>> changes = {
      [](PlanKey& k) { k.device = 1; },
      [](PlanKey& k) { k.signature.pass = Pass::kBackward; },
      [](PlanKey& k) { k.signature.inputs = 2; },
      [](PlanKey& k) { k.signature.dtype = DType::kFloat16; },
      [](PlanKey& k) { k.signature.param_dtype = DType::kFloat64; },
      [](PlanKey& k) { k.signature.num_slices = 9; },
      [](PlanKey& k) { k.signature.channels = 2; },
      [](PlanKey& k) { k.signature.slice_len = 1001; },
      [](PlanKey& k) { k.signature.use_input_stats = false; },
      [](PlanKey& k) { k.signature.update_running_stats = true; },
      [](PlanKey& k) { k.signature.weight_grads = true; },
      [](PlanKey& k) { k.signature.writes_output = false; },
      [](PlanKey& k) { k.signature.vector_io = !k.signature.vector_io; },
      [](PlanKey& k) { k.signature.coaligned = !k.signature.coaligned; },
      [](PlanKey& k) { k.signature.layout = Layout::kChannelsLast; },
      [](PlanKey& k) { k.signature.activation = Activation::kSilu; },
      [](PlanKey& k) { k.signature.slice_channels = 2; },
      [](PlanKey& k) { k.signature.channel_affine = true; },
      [](PlanKey& k) { k.options.force_path = Path::kSplitPipelined; },
      [](PlanKey& k) { k.options.force_ctas_per_slice = 3; },
      [](PlanKey& k) { k.options.force_slice_clusters = 2; },
      [](PlanKey& k) { k.options.force_ctas_per_sm = 2; },
      [](PlanKey& k) { k.options.max_ctas_per_sm = 1; },
      [](PlanKey& k) { k.options.force_exchange = Exchange::kGlobal; },
      [](PlanKey& k) { k.options.force_resident_parts = 0; },
      [](PlanKey& k) { k.options.force_part_bytes = 32 * 1024; },
      [](PlanKey& k) { k.options.force_walk_back = 1; },
      [](PlanKey& k) { k.options.force_group_lanes = 16; },
      [](PlanKey& k) { k.options.force_group_cta_threads = 64; },
      [](PlanKey& k) { k.options.force_register_vecs = 12; },
      [](PlanKey& k) { k.options.force_channel_block = 64; },
      [](PlanKey& k) { k.options.force_tile_rows = 32; },
      [](PlanKey& k) { k.options.force_stream_parts = 0; },
      [](PlanKey& k) { k.options.force_stream_applies = 0; },
  };
  PlanCache cache(64);
  cache.insert(base, Plan{});
  for (std::size_t i = 0; i < changes.size(); ++i) {
    PlanKey changed = base;
    changes[i](changed);
    EXPECT_FALSE(changed == base) << "change " << i;
    Plan found;
    EXPECT_FALSE(cache.find(changed, &found)) << "change " << i << " found the base key's plan";
  }
}

TEST(PlanCache, NeverHoldsMoreThanItsCapacity) {
  PlanCache cache(4);
  for (int64_t n = 1; n <= 10; ++n) {
    cache.insert(PlanKey{0, signature_for(n, 64), {}}, Plan{});
    EXPECT_LE(cache.size(), 4u);
  }
  Plan found;
  EXPECT_TRUE(cache.find(PlanKey{0, signature_for(10, 64), {}}, &found));  // the newest stays
}

// Threads planning different shapes at once, each checking that what it finds is its own plan.
TEST(PlanCache, ConcurrentFindsAndInsertsAgree) {
  PlanCache cache(64);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const int64_t slices = 1 + (t * 7 + i) % 100;  // more keys than the capacity: drops happen too
        const PlanKey key = PlanKey{0, signature_for(slices, 64), {}};
        Plan plan;
        if (!cache.find(key, &plan)) {
          plan.num_slices = slices;
          cache.insert(key, plan);
        } else if (plan.num_slices != slices) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.size(), 64u);
}

}  // namespace
}  // namespace inorm::detail
