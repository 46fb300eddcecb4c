// kGroupRegisters: small slices (up to 4096 elements of aligned 16-bit types, 2048 of float32, 1024
// of float64 or of misaligned views; planner.cpp choose_group_config, config.h group_config_fits).
// A group of 4 to 64 lanes loads its slice of every input into registers once; the op's reductions
// run over those registers (kernels/forward_op.cuh, kernels/backward_op.cuh), so each input is read
// once and the output written once.
// The kernels, compiled one element type a file (kernels/instances/); the launch:
// kernels/group_registers.cu.
#pragma once

#include <array>
#include <type_traits>
#include <utility>

#include "config.h"
#include "kernels/backward_op.cuh"
#include "kernels/chunk.cuh"
#include "kernels/common.cuh"
#include "kernels/forward_op.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

// A group's slice in registers: item j of a lane starts at element (j * kGroup + lane) * kVec; with
// kVector the slice is a whole number of vectors, so an item is either whole or absent. Vectors
// stay as loaded, four 32-bit words, and are converted at each use (common.cuh pair_element), so a
// 16-bit element takes half the registers of its float32 value; scalars are held in the
// accumulation type.
template <typename T, int kGroup, int kItems, bool kVector, int kInputs>
struct GroupSlice {
  using Acc = AccOf<T>;
  static constexpr int kVec = kVector ? kVecOf<T> : 1;
  using Item = std::conditional_t<kVector, uint4, Acc>;
  Item items[kInputs][kItems];
  bool active;
  int lane;
  int64_t len;

  __device__ __forceinline__ int64_t first(int j) const { return (static_cast<int64_t>(j) * kGroup + lane) * kVec; }
  __device__ __forceinline__ bool valid(int j) const { return active && first(j) < len; }
  // Element k of an item.
  static __device__ __forceinline__ Acc element(const Item& item, int k) {
    if constexpr (kVector) {
      const auto word = [&](int w) { return w == 0 ? item.x : w == 1 ? item.y : w == 2 ? item.z : item.w; };
      if constexpr (sizeof(T) == 2) {
        return pair_element<T>(word(k / 2), k);
      } else if constexpr (sizeof(T) == 4) {
        return __uint_as_float(word(k));
      } else {
        return __hiloint2double(static_cast<int>(word(2 * k + 1)), static_cast<int>(word(2 * k)));
      }
    } else {
      return item;
    }
  }
  __device__ __forceinline__ Acc value(int i, int j, int k) const { return element(items[i][j], k); }

  // f(v) for every element of the slice: a valid item is whole (kVector) or one element, so no
  // element needs its index checked.
  template <typename F>
  __device__ __forceinline__ void for_each(F&& f) const {
    walk<false>(0, len, f);
  }
  // f(v) for the elements of the slice in [begin, end) (GroupNorm's backward, a channel at a time):
  // items outside it skipped whole, items inside it unchecked, elements checked one by one only in
  // an item across its ends (a check per element cost two 64-bit compares and a branch in every
  // item, dev/VARIANTS.md 73). The two loops are common.cuh for_vector_in_range's, written out:
  // through the helper nvcc built this walk otherwise, and GroupNorm + SiLU's backward on 243
  // bfloat16 a slice ran 12% slower (dev/VARIANTS.md 74).
  template <typename F>
  __device__ __forceinline__ void for_each_range(int64_t begin, int64_t end, F&& f) const {
    walk<true>(begin, end, f);
  }
  template <bool kRanged, typename F>
  __device__ __forceinline__ void walk(int64_t begin, int64_t end, F&& f) const {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (!valid(j) || (kRanged && (first(j) + kVec <= begin || first(j) >= end))) continue;
      // 16-bit types: each walk converts its own copy of the words. Otherwise the compiler keeps
      // the float32 values (or what a pass derives from them) live from one walk to the next, or
      // hoists them out of GroupNorm's loop over channels (ptxas: the general backward at 8 items
      // 254 registers a lane without the copy, 124 with it). float32 and float64 values are the
      // words themselves; copied so, the tiny-slices backward (float32, 2 items) ran 4% slower
      // (dev/VARIANTS.md 66).
      Item held[kInputs];
#pragma unroll
      for (int i = 0; i < kInputs; ++i) {
        held[i] = items[i][j];
        if constexpr (kVector && sizeof(T) == 2) {
          asm volatile("" : "+r"(held[i].x), "+r"(held[i].y), "+r"(held[i].z), "+r"(held[i].w));
        }
      }
      const auto visit = [&](int k) {
        Acc v[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) v[i] = element(held[i], k);
        f(v);
      };
      if (!kRanged || (first(j) >= begin && first(j) + kVec <= end)) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) visit(k);
      } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (first(j) + k >= begin && first(j) + k < end) visit(k);
        }
      }
    }
  }
};

}  // namespace (the specialization lives in its template's namespace)

template <typename T, int kGroup, int kItems, bool kVector, int kInputs>
inline constexpr bool kElementsInRegisters<GroupSlice<T, kGroup, kItems, kVector, kInputs>> = true;

namespace {

template <typename Op, int kGroup, int kItems, bool kVector>
__global__ void __launch_bounds__(kGroupCtaThreads) group_registers_kernel(const KernelArgs args) {
  begin_dependent_kernel();
  using T = typename Op::Elem;
  using Acc = typename Op::Acc;
  constexpr int kInputs = Op::kInputs;
  // The plan's CTA: up to kGroupCtaThreads, whole warps and whole groups (planner.cpp plan_group).
  const int slices_per_cta = blockDim.x / kGroup;

  GroupSlice<T, kGroup, kItems, kVector, kInputs> slice_data;
  constexpr int kVec = decltype(slice_data)::kVec;
  const int group = threadIdx.x / kGroup;
  slice_data.lane = threadIdx.x % kGroup;
  const int64_t slice = static_cast<int64_t>(blockIdx.x) * slices_per_cta + group;
  slice_data.active = slice < args.num_slices;
  slice_data.len = args.slice_len;
  const int64_t offset = slice_data.active ? slice * args.slice_len : 0;
  const T* inputs[2] = {static_cast<const T*>(args.x) + offset,
                        kInputs > 1 ? static_cast<const T*>(args.dy) + offset : nullptr};

#pragma unroll
  for (int i = 0; i < kInputs; ++i) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if constexpr (kVector) {
        slice_data.items[i][j] =
            slice_data.valid(j) ? *reinterpret_cast<const uint4*>(inputs[i] + slice_data.first(j)) : uint4{};
      } else {
        slice_data.items[i][j] = slice_data.valid(j) ? Traits<T>::to_acc(inputs[i][slice_data.first(j)]) : Acc(0);
      }
    }
  }

  // Every lane of the warp takes part in the reductions, those of an inactive group too.
  const typename Op::Context ctx = Op::context(args, slice_data.active ? slice : 0);
  GroupAllSum<kGroup> all_sum;
  const ChunkPlace place{slice_data.active ? slice : 0, 0, 0, slice_data.active && slice_data.lane == 0};
  const typename Op::Partial partial = Op::reduce(args, ctx, slice_data, place, args.slice_len, all_sum);
  if (!slice_data.active) return;
  typename Op::Coefficients coefficients =
      Op::finish(args, slice, ctx, Op::combine(&partial, 1), slice_data.lane == 0);
  ChannelWindow<Op> window(args, slice, coefficients);
  if (args.out == nullptr) return;

  T* out = static_cast<T*>(args.out) + offset;
  // Every item with `activation` fixed (or the coefficients themselves: a branch per element) and
  // the elements' channels followed by `item_window`.
  const auto store_items = [&](const auto& activation, auto& item_window) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (!slice_data.valid(j)) continue;
      const auto output = [&](int k) {
        Acc v[kInputs];
#pragma unroll
        for (int i = 0; i < kInputs; ++i) v[i] = slice_data.value(i, j, k);
        return Op::apply(coefficients, activation, v);
      };
      const int64_t first = slice_data.first(j);
      // A lane's items lie group * 16 bytes apart, each mostly in a channel of its own: the window
      // moves to the item's first element, and only an item across a channel's end (a channel
      // length that is not a whole number of vectors) goes element by element, in a loop left
      // rolled. Unrolled, with a move at every element, that path made the general forward's
      // kernels 0.4-0.8 MB of code, and GroupNorm's affine waited on instruction fetch at twice
      // shared_resident's time (dev/VARIANTS.md 71).
      item_window.seek(first);
      if constexpr (kVector) {
        if (item_window.covers(first, kVec)) {
          Pack<T> pack;
#pragma unroll
          for (int k = 0; k < kVec; ++k) pack.v[k] = Traits<T>::from_acc(output(k));
          store_pack_l2(out + first, pack);
        } else {
#pragma unroll 1
          for (int k = 0; k < kVec; ++k) {
            item_window.seek(first + k);
            __stcs(out + first + k, Traits<T>::from_acc(output(k)));
          }
        }
      } else {
        __stcs(out + first, Traits<T>::from_acc(output(0)));
      }
    }
  };
  // The forward fixes the activation around the loop, a copy of it for each (taken per element,
  // its branch held two warps a slice behind shared_resident: dev/VARIANTS.md 66), and a slice of
  // one channel (InstanceNorm with an activation) takes a copy without the window's moves: an
  // item's seeks (a weight and a bias load an element, by the parameters' dtype) otherwise lay
  // between its stores, and a warp a slice spent almost half its cycles waiting for instruction
  // fetch (ncu on nnunet-deep: 10,592 instructions of code, the items' stores 20 KiB apart). The
  // backward takes the activation per element (fixed, its registers rose by up to 20 a lane and
  // some float64 builds spilled); its window moves wherever it has one (GroupNorm's channel affine).
  if constexpr (kInputs == 1) {
    coefficients.visit([&](const auto& activation) {
      with_window(window, [&](auto& item_window) { store_items(activation, item_window); });
    });
  } else {
    store_items(coefficients, window);
  }
}

// The kernel of configuration I, or null where it does not fit a lane's registers for this op
// (the planner never picks it there).
template <typename Op, std::size_t I>
constexpr KernelFn group_kernel() {
  if constexpr (group_config_fits(kGroupConfigs[I], sizeof(typename Op::Elem), sizeof(typename Op::Acc),
                                  Op::kInputs, Op::kGeneralForm)) {
    return &group_registers_kernel<Op, kGroupConfigs[I].group, kGroupConfigs[I].items, kGroupConfigs[I].vector>;
  } else {
    return nullptr;
  }
}

template <typename Op, std::size_t... I>
constexpr std::array<KernelFn, sizeof...(I)> group_kernel_table(std::index_sequence<I...>) {
  return {group_kernel<Op, I>()...};
}

// The plan's launch for element type T (launchers.h launch_group_of).
template <typename T>
Status launch_group_typed(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_op_of<T>(plan, [&](auto op) -> Status {
    using Op = decltype(op);
    static constexpr auto table = group_kernel_table<Op>(std::make_index_sequence<kNumGroupConfigs>{});
    for (int i = 0; i < kNumGroupConfigs; ++i) {
      const GroupConfig& config = kGroupConfigs[i];
      if (config.group == plan.group_size && config.items == plan.items_per_lane &&
          config.vector == plan.vector_io && table[i] != nullptr) {
        if (!group_cta_fits(plan.threads, config.group)) {
          return Status(StatusCode::kInvalidArgument,
                        "inorm: the plan's group_registers CTA is not whole warps and slices of at most 256 threads");
        }
        return launch_dependent("group_registers launch", table[i], static_cast<unsigned>(plan.grid),
                                static_cast<unsigned>(plan.threads), 0, stream, args);
      }
    }
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan names a group configuration that is not compiled in");
  });
}

}  // namespace
}  // namespace inorm::detail
