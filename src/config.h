// Constants shared by the planner (host C++) and the kernels: the planner may only choose
// configurations that the kernel files instantiate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inorm::detail {

#ifdef __CUDACC__
#define INORM_HOST_DEVICE __host__ __device__
#else
#define INORM_HOST_DEVICE
#endif

// kGroupRegisters: every CTA has this many threads (fewer where forced: PlanOptions::
// force_group_cta_threads); a slice is held by `group` lanes (two warps where 64), each with
// `items` loads of 16 bytes (vector) or of one element (scalar). The planner takes 32 lanes for
// vectors, 64 where 32 would hold more than kGroupMaxLaneValues; {16, 4, true} runs where forced
// (PlanOptions::force_group_lanes; dev/VARIANTS.md 48).
inline constexpr int kGroupCtaThreads = 256;
// Whether a group_registers CTA of `threads` is whole warps and whole slices of `group` lanes,
// within kGroupCtaThreads: the bound of a forced CTA size, and the launch's check of a plan.
INORM_HOST_DEVICE constexpr bool group_cta_fits(int threads, int group) {
  return threads > 0 && threads <= kGroupCtaThreads && threads % 32 == 0 && threads % group == 0;
}
struct GroupConfig {
  int group;
  int items;
  bool vector;
};
inline constexpr GroupConfig kGroupConfigs[] = {
    {4, 1, false},  {8, 1, false},  {16, 1, false}, {32, 1, false}, {32, 2, false}, {32, 4, false},
    {32, 8, false}, {32, 16, false}, {32, 32, false}, {32, 1, true},  {32, 2, true},  {32, 4, true},
    {32, 8, true},  {32, 16, true},  {64, 8, true},   {16, 4, true},
};
inline constexpr int kNumGroupConfigs = sizeof(kGroupConfigs) / sizeof(kGroupConfigs[0]);
inline constexpr int kGroupMaxScalarItems = 32;
// A lane holds its vectors as loaded (16 bytes an item) and its scalars in the accumulation type,
// once per input: a configuration is planned only where that takes at most kGroupMaxLaneBytes (the
// forward's largest: 16 vectors, 32 float64 scalars; the backward, which holds x and dy, takes half
// the items) and at most kGroupMaxLaneValues of each input, which a lane's passes walk one after
// another. The general op (plan_internal.h runs_general_op: an activation or GroupNorm's channel
// affine) holds at most 8 vectors a lane; its backward, which takes the activation's branch per
// element here, also keeps the bounds it had when lanes held float32 values: one warp, its values
// counted in the accumulation type within kGroupMaxLaneBytes. Measured on the H200
// (dev/VARIANTS.md 66, 68): the plain op ran faster than shared_resident at 64 values a lane (16
// vectors of float32 or float64, 8 of 16-bit types in one or two warps) and slower at 128 (16 of
// 16-bit types); the general backward slower with two warps (1.2-1.7x); the general forward, its
// activation fixed around each item, faster in two warps of 8 vectors than in one of 16 (2048
// float32 with LeakyReLU 0.038 against 0.054 ms; shared_resident 0.048).
inline constexpr int kGroupMaxLaneBytes = 256;
inline constexpr int kGroupMaxLaneValues = 64;
inline constexpr bool group_config_fits(const GroupConfig& config, int elem_bytes, int acc_bytes, int inputs,
                                        bool general) {
  const int values = config.items * (config.vector ? 16 / elem_bytes : 1);
  if (general && config.vector && config.items > 8) return false;
  if (general && inputs > 1) return config.group <= 32 && values * acc_bytes * inputs <= kGroupMaxLaneBytes;
  return config.items * (config.vector ? 16 : acc_bytes) * inputs <= kGroupMaxLaneBytes &&
         values <= kGroupMaxLaneValues;
}

// kSharedResident: CTAs per SM share kSharedThreadsPerSm threads (the kernel is compiled for 64
// registers a thread); a CTA has a power of two in [min, max] threads.
inline constexpr int kSharedMinThreads = 128;
inline constexpr int kSharedMaxThreads = 512;
inline constexpr int kSharedThreadsPerSm = 1024;
// The threads of a CTA at `ctas_per_sm` CTAs per SM: the largest allowed power of two that
// shares kSharedThreadsPerSm.
inline constexpr int shared_threads_for(int ctas_per_sm) {
  int threads = kSharedMaxThreads;
  while (threads > kSharedMinThreads && threads * ctas_per_sm > kSharedThreadsPerSm) threads /= 2;
  return threads;
}
// Measured on the H200 (dev/VARIANTS.md, variants 4 and 9): one CTA per SM never beat two or more
// where two fit; chunks of at most 64 KiB filling about 192 KiB of each SM beat every other split of a
// slice (seed fp32: 16 CTAs per slice at three per SM 1.16x copy against 11 at two per SM 1.21x);
// beyond 16 CTAs per slice the exchange grows (22 and 24 ran 1.31-1.34x), and 132 took 3.3x copy
// on vol3d against 1.7x for the split path. Groups of up to 16 CTAs (a cluster on sm_90) hold the
// largest slice that does not split; wider groups, through L2 only, serve slices that would
// otherwise have one CTA per SM (8x16x1024x512 fp32: 32 CTAs at three per SM 1.28-1.31x against
// 1.52-1.54x with 10 at one per SM).
inline constexpr int kSharedMaxCtasPerSm = 6;
inline constexpr int kSharedMaxClusterCtas = 16;
inline constexpr int kSharedMaxCtasPerSlice = 64;
// The most CTAs a group may have: a cluster's, or the L2 exchange's inbox.
inline constexpr int shared_max_group(bool cluster) { return cluster ? kSharedMaxClusterCtas : kSharedMaxCtasPerSlice; }
// The forward of a slice that the planner's shared_resident plan spreads over this many CTAs or
// more without register parts (a full cluster, or a group through L2) runs split_pipelined
// instead, unless an option of shared_resident's is forced. Measured on the H200
// (bench/results/2026-12-01-h200-362ce7d/, mid-forward.md, slices of 0.5-3.5 MiB): split_pipelined
// ran 1-13% faster on 8 of the 9 shapes with 16-56 CTAs a slice (4x64x768x768 bf16: 1.42x copy ->
// 1.35x, 16x64x768x768 bf16: 1.50x -> 1.32x) and 3% slower on the ninth (8x32x768x512 fp32, 1.27x
// -> 1.31x); it ran 10-24% slower than the plans of 5-8 CTAs with register parts. The backward
// keeps shared_resident: split_pipelined ran 3-16% slower there at 36-48 CTAs a slice
// (mid-backward.md).
inline constexpr int kForwardSplitMinGroup = 16;
inline constexpr int64_t kSharedSteadyChunkBytes = 64 * 1024;
inline constexpr int64_t kSharedSteadyBytesPerSm = 192 * 1024;
inline constexpr int kSharedSteadyMinRounds = 2;
// Static shared memory of the kernel (barriers, CUB storage, the inbox of kSharedMaxCtasPerSlice
// chunk statistics) stays below this.
inline constexpr int kSharedStaticReserve = 3072;
// Slices handed out in order from a counter (kernels/shared_resident.cuh next_slice) where the grid
// runs at least this many rounds of slices, each CTA's share of a slice at least this long; below,
// the groups stride. Measured (dev/VARIANTS.md 34): in order took the seed fp32 from 1.12x copy
// to 1.09x and the half seeds from 1.12x to 1.04-1.06x, and slices of 32 KiB and more over 4-45
// rounds ran 2-8% faster; 1.3-1.5 rounds lost 1-3 us (the counter's memset and the wait for each
// slice), and 8 KiB slices over 5 rounds lost 7%.
inline constexpr int kSharedInOrderMinRounds = 3;
inline constexpr int64_t kSharedInOrderMinChunkBytes = 16 * 1024;
// Register parts: at kSharedRegisterCtasPerSm CTAs per SM a cluster CTA of kSharedRegisterThreads
// threads may also hold the end of its chunk in registers, kSharedRegisterVecs 16-byte vectors a
// thread (32 KiB a CTA; the kernel is compiled for 128 registers a thread there), so that groups of
// at most kSharedRegisterMaxGroup hold slices that would otherwise need wider groups. Measured on
// the H200 (dev/VARIANTS.md 35): the memory skeleton of 1 MiB fp32 slices ran 1.035x copy with 8
// CTAs a slice at two per SM (96 KiB shared + 32 KiB registers) against 1.06-1.07x with 16 at
// three; a wide group waits on its slowest CTA every round. The inputs share the register part
// (the backward holds kSharedRegisterVecs / 2 vectors of x and as many of dy), and a group of the
// backward may be `inputs` times as wide, so that register parts serve the same slices in either
// pass (up to 1.1 MiB of float32 each).
inline constexpr int kSharedRegisterCtasPerSm = 2;
inline constexpr int kSharedRegisterThreads = 256;
inline constexpr int kSharedRegisterVecs = 8;
inline constexpr int64_t kSharedRegisterBytes = int64_t{kSharedRegisterThreads} * kSharedRegisterVecs * 16;
// Wide register parts: kSharedWideRegisterVecs vectors a thread (48 KiB a CTA), for the forward's
// plain op only, where the narrow part leaves its chunk's buffer too large for two CTAs an SM: a
// group of eight then holds 1.1-1.2 MiB slices of 16-bit types (the narrow part needs nine, and 16-bit
// groups wider than eight lost to split_pipelined, dev/VARIANTS.md 61) and every group a sixth more.
// Measured on the H200 (dev/VARIANTS.md 74), against split_pipelined: 4x64x768x768 bfloat16 1.32 ->
// 1.13-1.15x a copy, 16x64x768x768 1.29 -> 1.06x, 2.25-2.3 MiB float32 slices 1.30-1.31 ->
// 1.19-1.23x; taken where narrow parts hold the slice, they ran level or lost (gn-seed-8groups
// 1.15-1.16 -> 1.19-1.20x), so narrow parts come first.
inline constexpr int kSharedWideRegisterVecs = 12;
inline constexpr int64_t kSharedWideRegisterBytes = int64_t{kSharedRegisterThreads} * kSharedWideRegisterVecs * 16;
inline constexpr int kSharedRegisterMaxGroup = 8;
inline constexpr int shared_register_max_group(int inputs) {
  return kSharedRegisterMaxGroup * inputs < kSharedMaxClusterCtas ? kSharedRegisterMaxGroup * inputs
                                                                 : kSharedMaxClusterCtas;
}
// The widest cluster with register parts: none for the backward with an activation, nor for the
// forward's general op (an activation, a channel affine across chunks) unless its plan without
// them would give way to split_pipelined (`in_place_of_split`: planner.cpp plan_slices); a full
// cluster for the forward on 4- and 8-byte elements (its chunks hold the fewest elements to
// reduce), eight CTAs for GroupNorm's backward with weight gradients (sums per channel inside its
// chunks), shared_register_max_group otherwise.
// Measured on the H200 (dev/VARIANTS.md 61-63, 88): the forward of float32 slices of 1.5-2 MiB in
// clusters of 11-15 ran 1.13-1.20x copy against split_pipelined's 1.25-1.30x, of bfloat16
// 1.42-1.43x against 1.31-1.35x (twice the elements a chunk). The general forward with register
// parts, in place of split_pipelined (88; the spanning instance, which spills nothing:
// kernels/shared_resident.cuh): InstanceNorm + LeakyReLU on 1 MiB float16 slices 1.45 -> 1.37x,
// GroupNorm(16) + SiLU 1.58 -> 1.52-1.54x, GroupNorm's affine on 1 MiB bfloat16 slices (chunks
// of one channel: the plain op) 1.27 -> 1.19-1.20x, float32 2 and 4 MiB slices + LeakyReLU / ReLU
// (in pairs) 1.28 -> 1.21x and 1.38 -> 1.26-1.27x, sd-vae-mid-gn-silu 1.70 -> 1.64-1.65x,
// GroupNorm(16) + SiLU on 2 MiB float32 slices and nnunet-in3d-lrelu level; in place of the
// steady plan it lost (GroupNorm(16) of 96x96 float32 channels, 576 KiB slices, five CTAs with
// register parts against nine at three an SM: 1.20 -> 1.66x). The backward with an activation,
// whose register parts take the activation's branch per element (kernels/backward_op.cuh
// channel_sums), ran 0.5-1 MiB 16-bit slices 1.92-3.37x of 1.5 copies against 1.36-2.30x at three
// CTAs an SM without (float32: 1.34x against 1.26-1.33x); GroupNorm's backward on 1 MiB float32
// slices ran 2.07-2.55x with 15 CTAs a slice (16: 1.75-2.15x) against 1.67-1.93x with 32 through L2.
inline constexpr int shared_register_part_max_group(int inputs, int elem_bytes, bool general_op, bool activation,
                                                    bool channel_sums, bool in_place_of_split) {
  if ((inputs == 2 && activation) || (inputs == 1 && general_op && !in_place_of_split)) return 0;
  if (channel_sums) return kSharedRegisterMaxGroup;
  return inputs == 1 && elem_bytes >= 4 ? kSharedMaxClusterCtas : shared_register_max_group(inputs);
}
// A slice that the plain float32 forward holds in a register cluster wider than
// kSharedRegisterMaxGroup spans clusters of this many CTAs instead, the group rounded up to whole
// clusters (Plan::slice_clusters; each cluster's combined partial through L2): an H200 holds 132
// clusters of two at two CTAs an SM, every slot, against 176-224 CTAs in clusters of 11-16.
// Measured on the H200 (dev/VARIANTS.md 84, x copy, the one cluster against clusters of two):
// 8x32x768x512 1.21 -> 1.15, 8x16x1536x384 1.24 -> 1.21-1.22, gn-seed-8groups (2 MiB) 1.18-1.19 ->
// 1.15-1.16; clusters of four or eight won less or lost (gn-seed-8groups 1.18, 1.21), and at eight
// CTAs a slice (the seed, 240 CTAs) clusters of two lost (1.05 -> 1.06). Other dtypes, the
// backward and ops without register parts are not measured this way and keep their clusters;
// slices no one cluster holds span pairs in every dtype and both passes (below).
inline constexpr int kSharedPairClusterCtas = 2;
// The most clusters a slice spans (Plan::slice_clusters): the spanning kernel's inbox holds that
// many combined partials, two inboxes a CTA (as the L2 exchange's one of kSharedMaxCtasPerSlice),
// inside kSharedStaticReserve. The ops with a runtime epilogue (an activation; the forward's
// channel affine across chunks: plan_internal.h runs_runtime_epilogue) keep inboxes of a cluster's
// kSharedMaxClusterCtas: with 512 bytes more of static shared memory a CTA, the two CTAs an SM of
// sd-vae-mid-gn-silu's plan (96 KiB buffers) passed 196 KiB, and it ran 1.63 -> 1.69-1.74x a copy
// (dev/VARIANTS.md 89); nothing else moved.
inline constexpr int kSharedMaxSliceClusters = 32;
static_assert(2 * kSharedMaxSliceClusters <= kSharedMaxCtasPerSlice,
              "the spanning kernel's two inboxes take no more static shared memory than the L2 exchange's one");
INORM_HOST_DEVICE inline constexpr int shared_max_slice_clusters(bool runtime_epilogue) {
  return runtime_epilogue ? kSharedMaxClusterCtas : kSharedMaxSliceClusters;
}
// Slices that no one cluster holds (the planner's plan otherwise split_pipelined, or a group
// through L2) span clusters of kSharedPairClusterCtas, the narrowest group of whole pairs with
// register parts (planner.cpp plan_spanning_pairs), where the slices fill at least this many
// rounds of the resident pairs: the forward's first and last rounds cost more than the backward's.
// Measured on the H200 (dev/VARIANTS.md 86; forward x copy, backward x 1.5 copies, against the plan
// replaced): forward mid-4mib-fp32 1.36-1.37 -> 1.30-1.31 (32 slices in 15 pairs, 4 rounds),
// 4x32x1024x1024 1.30 -> 1.19-1.20, 16 of those slices (2 rounds) 1.45-1.47 -> 1.35-1.37, but 8
// and 9 (1-1.1 rounds) 1.57-1.58 -> 1.59-1.61 and 4 or 7 lost 3-6%; 3 MiB float32 1.40-1.44 ->
// 1.33-1.35, 1.5 MiB 16-bit (6 pairs) 1.36-1.38 -> 1.26-1.28, 2 MiB bfloat16 1.38-1.39 ->
// 1.33-1.34, 3.5 MiB bfloat16 1.33 -> 1.26, 4 MiB float64 1.32-1.33 -> 1.30. Backward:
// mid-1mib-bf16 (36 CTAs through L2) 1.34-1.35 -> 1.16-1.17, 2 MiB float32 1.35-1.44 -> 1.16-1.23
// and at one round (8 slices) 1.25-1.26 -> 1.20-1.22, at half a round 1.58-1.60 -> 1.46-1.52;
// gn-seed-8groups 1.35 -> 1.12-1.13, with weight gradients (sums per channel) 1.39-1.40 -> 1.29,
// 1 MiB GroupNorm slices of 16 channels with weight gradients (32 CTAs through L2) 1.29-1.31 ->
// 1.18-1.19. Narrowest won: 4 MiB float32 in 15 pairs 1.19-1.20 against 1.22-1.23 in 16, 1.1 MiB
// bfloat16 backward in 9 pairs 1.16-1.17 against 1.19-1.21 in 10.
inline constexpr int kSharedPairSpanMinRoundsForward = 2;
inline constexpr int kSharedPairSpanMinRoundsBackward = 1;
// The widest group of pairs that rule takes, in pairs (at most kSharedMaxSliceClusters): the
// backward every one the kernel takes (4.4 MiB of x and of dy a slice), the forward's plain op 26
// (about 7.2 MiB a slice), its general op (an activation; GroupNorm's affine across chunks) 16.
// Measured on the H200 (dev/VARIANTS.md 89; forward x copy, backward x 1.5 copies, against
// split_pipelined in the same process, two rounds): backward 2.5 MiB float32
// (18 pairs) 1.41-1.43 -> 1.13, mid-3mib-fp16 (20) 1.48 -> 1.33, 3 MiB bfloat16 (22) 1.41-1.42 ->
// 1.23-1.24, mid-4mib-fp32 (30) 1.44-1.46 -> 1.25-1.26, eight of its slices (two rounds) 1.58-1.60
// -> 1.32-1.34, GroupNorm(8) with weight gradients on 4 MiB float32 slices (30) 1.53-1.54 -> 1.51;
// forward 5 MiB float32 (19) 1.33 -> 1.22, mid-6mib-bf16 (22) 1.37 -> 1.34, 24 of its slices
// 1.42 -> 1.35, 7 MiB bfloat16 (26) 1.46-1.47 -> 1.42-1.43, but 8 MiB slices (29) lost: vol3d 1.31
// -> 1.33, float16 1.40 -> 1.41-1.42, and the general op's sd-vae-gn-silu 1.57 -> 1.91.
inline constexpr int kSharedPairSpanMaxClustersBackward = kSharedMaxSliceClusters;
inline constexpr int kSharedPairSpanMaxClustersForward = 26;
inline constexpr int kSharedPairSpanMaxClustersGeneralForward = shared_max_slice_clusters(true);
// Plans with register parts over at least this many rounds of slices take each next slice from the
// counter before normalizing the current one, its latency hidden under the stores
// (kernels/shared_resident.cuh). Measured on the H200 (dev/VARIANTS.md 35), against taking it after
// the stores: seed fp32 (239 rounds) 3.735 → 3.682 ms, 2048 1 MiB bf16 slices (68 rounds) -0.7%,
// 34 rounds -0.3% to +0.5%, 4-26 rounds +0% to +3% (slices taken early leave the last round
// unevenly spread); at three CTAs per SM it lost everywhere (seed bf16 +0.9%, mid-affine +1.3%),
// where the SM's other two CTAs hide the latency anyway.
inline constexpr int kSharedEarlyDispatchMinRounds = 64;
// Where the grid takes its groups' slices in more than one round, group k starts its first load
// k x this many SM cycles after the grid starts (kernels/shared_resident.cuh), the groups' first
// round spread over at most kSharedStaggerMaxSpreadCycles (beyond 48 groups each waits less).
// Started together, every group loads, reduces, exchanges and stores in step with the others: the
// first round's loads run with no stores beside them, the last round's stores with no loads, and
// the memory idles while every group waits on its exchange; on few rounds that is most of the
// gap to a copy. Measured on the H200 (dev/VARIANTS.md 85), forward x copy at 0 / 100 / 175 / 250
// / 350 cycles: seed-sized 1 MiB float32 slices at batch 2 1.23 / 1.15 / 1.14 / 1.14 / 1.15,
// batch 4 1.15 / 1.11 / 1.10 / 1.10 / 1.11, batch 112 1.05 throughout; mid-1mib-bf16 1.11 / 1.09
// / 1.08 / 1.07 / 1.07; gn-seed-8groups 1.17 / 1.14 / 1.14 / 1.13 / 1.12; gn-only-fp32 1.12 /
// 1.08 / 1.09 / 1.08 / 1.09; 500 cycles and more lost again (1000: seed batch 2 1.17,
// 8x32x768x512 1.20 against 1.12 at 250). Backward x 1.5 copies at 0 / 250: seed batch 2 1.17 /
// 1.11, CycleGAN's 1x64x256x256 1.47 / 1.35. Groups of one CTA (which exchange nothing) are not
// staggered: 792 of them at even 100 cycles apart ran 2x slower.
inline constexpr int kSharedStaggerCycles = 250;
inline constexpr int kSharedStaggerMaxSpreadCycles = 12000;
// Slices spanning clusters (Plan::slice_clusters) spread their first round over up to this many
// cycles instead (132 pairs: 181 cycles apart). Measured on the H200 (dev/VARIANTS.md 87, x copy
// forward, x 1.5 copies backward, at 0 / 3,000 / 6,000 / 12,000 / 24,000 / 36,000 / 48,000 /
// 72,000 cycles): mid-4mib-fp32 1.34 / 1.29 / 1.29 / 1.29 / 1.21-1.22 / 1.24 / 1.25 / 1.36; 16 of
// its slices 1.44 / 1.37 / 1.35-1.36 / 1.36-1.37 / 1.27-1.29 / 1.36 / 1.39 / 1.56; 4x32x1024x1024
// 1.19 / 1.19-1.20 / 1.18-1.19 / 1.19-1.20 / 1.16-1.17 / 1.17 / 1.16 / 1.19; mid-3mib-fp16 without
// affine 1.32 / 1.28 / 1.28 / 1.29 / 1.27 / 1.25 / 1.24 / 1.31; 1.5 MiB bfloat16 1.28 / 1.24-1.25 /
// 1.23-1.24 / 1.25-1.26 / 1.23-1.25 / 1.21 / 1.22 / 1.29; gn-seed-8groups 1.15 / 1.14 / 1.13 /
// 1.13 / 1.12-1.13 / 1.12 / 1.12 / 1.15; backward mid-1mib-bf16 1.18 / 1.16-1.17 / 1.16 / 1.17 /
// 1.14-1.15 / 1.15 / 1.16 / 1.18, gn-seed-8groups 1.07-1.10 throughout.
inline constexpr int kSharedSpanStaggerMaxSpreadCycles = 24000;
// The shared memory region that holds `bytes` of one input's chunk: 16 bytes more, so the chunk can
// mirror its tensor's alignment modulo 16 (the body then moves by bulk copy), rounded to 128. A CTA
// has one region per input, one after the other.
INORM_HOST_DEVICE inline constexpr int64_t shared_region_bytes(int64_t bytes) { return (bytes + 16 + 127) / 128 * 128; }
// A slice is not spread over CTAs so thin that each holds less than this (unless it must be).
inline constexpr int kSharedMinChunkBytes = 16 * 1024;
// The CTA size GroupNorm's backward takes with chunks of whole channels in one round (planner.cpp
// plan_shared): 512-thread CTAs (two an SM) ran 30-75% slower than 256 on every shape swept.
inline constexpr int kSharedChannelChunkThreads = 256;
// Such chunks may hold down to this many bytes: SD UNet's 2x1280x16x16 float16 (chunks of eight
// channels, 8 KiB) ran 0.028-0.031 ms in five CTAs a slice against 0.040-0.043 in two.
inline constexpr int kSharedMinChannelChunkBytes = 8 * 1024;
// GroupNorm's backward takes chunks of whole channels in two rounds (planner.cpp plan_shared) only
// for slices of at least this many values; shorter ones take one round. Two rounds of one channel a
// chunk ran slices of 2048-2560 values 6-13% slower than one round on the H200 (4x320x16x16 float32
// + SiLU 16.5 -> 18.5 us); on an H100 one round at six CTAs an SM ran the 16 swept shapes this
// changes (slices of 2048-2560 values) 13-23% faster than two (that shape 18.6 -> 14.5 us;
// dev/VARIANTS.md 108).
inline constexpr int64_t kSharedTwoRoundsMinSliceLen = 4096;

// Chunks of a slice (shared_resident) and parts (split_pipelined) of at least
// kChunkAlignMinBytes are whole multiples of kChunkAlignBytes, so that each starts that far into
// its slice; shorter ones are whole 16-byte vectors. Measured on the H200 against 16-byte multiples (bench/results/
// 2026-11-30-h200-5342974/sweeps/chunk-alignment.txt): 8x32x448x448 fp32 (chunks of 15440 values)
// 0.134 → 0.124 ms, 64x64x200x200 fp32 0.361 → 0.348, 4x3x2048x2048 bf16 0.088 → 0.085;
// 128-byte multiples gained a little less (0.126, 0.350, 0.085).
inline constexpr int kChunkAlignBytes = 512;
inline constexpr int kChunkAlignMinBytes = 16 * 1024;

// kSplitPipelined
inline constexpr int kSplitThreads = 256;
// The kernel is compiled for this many resident CTAs per SM, the most its stage buffer allows (80
// registers a thread; at four, 64 registers, GroupNorm's backward with the activation fixed around
// its loops spilled 76-420 bytes).
inline constexpr int kSplitCtasPerSm = 3;
// A part is one stage of this many bytes, brought into shared memory by one bulk async copy (many
// bytes in flight), three CTAs per SM. Measured on the H200 with split_slice's statistics kernel
// (dev/VARIANTS.md 16 and 19) against 96 KiB stages at two per SM: vol3d 0.400 against 0.417 ms,
// few-huge 0.161 against 0.165 ms, 2x32x128^3 bf16 0.208 against 0.220 ms, no case slower by more
// than 1.5%; 48 KiB stages at four per SM lost (few-huge 0.175 ms, vol3d 0.423 ms).
// The stage is shared by the inputs: a part of the backward (x and dy) is half as long.
inline constexpr int kSplitStageBytes = 64 * 1024;
INORM_HOST_DEVICE inline constexpr std::size_t split_stage_len(std::size_t elem_size, int inputs) {
  return kSplitStageBytes / (elem_size * static_cast<std::size_t>(inputs));
}

// The statistics items run this many items per CTA of the grid ahead of the least lead (one
// slice), so that the normalize items that wait for a slice's last statistics items find them
// finished. Measured on the H200 (bench/results/2026-11-30-h200-4902339/): 0 / 0.5 / 1 / 2 per
// CTA ran few-huge at 0.164 / 0.157 / 0.152 / 0.148 ms (split_slice 0.159), 3 and 4 no better,
// and 2 beat split_slice on all 18 shapes of the sweep; many slices of 4-8 MiB ran 5-6% faster
// still at 0.
inline constexpr int kSplitPipelinedSlackPerCta = 2;
// Slices of up to this many bytes of each input take a lead of half an item per CTA beyond one
// slice, and what they read or write once goes to L2 evict-first (Plan::evict_first: a resident
// part's load, the second read, the output's 16-byte stores), so that the parts read again stay in
// L2 between their two reads rather than being pushed out by the stream; each slice's elementwise
// items walk its parts back (Plan::walk_back), so that the parts its reductions read last are read
// again first. Measured on the H200 up to 8 MiB, walking forward (bench/results/
// 2026-12-04-h200-split-policy/, one process, x copy forward / x 1.5 copies backward, against the
// long lead without hints): vol3d 1.32 -> 1.28 / 1.46 -> 1.36, SD VAE's GroupNorm + SiLU 1.57 ->
// 1.52 / 1.97 -> 1.94, nnU-Net's LeakyReLU backward 1.57 -> 1.43, mid-6mib-bf16's backward 1.57 ->
// 1.44; the short lead alone lost (vol3d backward 1.51), the hints alone too (vol3d forward 1.38):
// dev/VARIANTS.md 92. Past 8 MiB that rule was level or lost, and walking back it won, measured on
// an H100 (bench/results/2026-12-07-walk-back/, dev/VARIANTS.md 121): few-huge 1.28 -> 1.24 / 1.48
// -> 1.41 and split-16mib 1.27 -> 1.26 / 1.46 -> 1.41 against the long lead (1.28 / 1.48 and 1.28 /
// 1.49 walking forward on the short one); past 16 MiB the walk was level or lost (split-64mib 1.44
// -> 1.45 / 1.61 -> 1.61, 32 MiB bfloat16 slices 1.39 forward). Up to 8 MiB walking back against
// forward: SD VAE's GroupNorm + SiLU backward 1.54 -> 1.42, the rest level (vol3d 1.14 / 1.25,
// nnU-Net's LeakyReLU backward 1.22 -> 1.21, SD VAE's forward 1.27).
inline constexpr int64_t kSplitShortLeadMaxInputBytes = int64_t{16} << 20;
inline constexpr double kSplitShortLeadSlackPerCta = 0.5;
// Resident parts a slice (Plan::resident_parts, read once): at most half the slice's parts, and at
// most one per SM, so that the other CTAs stream while the resident ones wait for their slice.
// Measured on the H200 (bench/results/2026-12-01-h200-resident/, forward x copy / backward x 1.5
// copies, none against the planner's): few-huge 1.48 / 1.71 against 1.39 / 1.58, vol3d 1.46 / 1.61
// against 1.35 / 1.46, 4 MiB slices 1.44 / 1.56 against 1.32 / 1.35; one and a half per SM and more
// won only on few-huge's backward, by 1% (dev/VARIANTS.md 46). Ops with an activation or a
// channel's affine inside the slice, bound by their instructions, take one per four SMs: SD VAE's
// GroupNorm + SiLU backward ran 3.09 / 3.08 / 3.16 / 3.36x with 0 / 33 / 66 / 128 resident parts,
// and again at 1.70 / 1.70 / 1.72 / 1.78 once it had come down (H200, dev/VARIANTS.md 122; its
// forward 1.49 / 1.46 / 1.48 / 1.66 at 0 / 33 / 64 / 128).
inline constexpr int kSplitResidentShareDivisor = 2;
inline constexpr int kSplitSmsPerResidentPart = 1;
inline constexpr int kSplitSmsPerResidentPartGeneral = 4;

// kElementwiseEval
inline constexpr int kEvalThreads = 256;

// Workspace segments start on this boundary.
inline constexpr std::size_t kWorkspaceAlign = 256;

// kChannelsLast: both passes stage a tile of every input in shared memory, at most this many bytes
// (three CTAs an SM), so each element is read once from HBM for the reduction. Measured on the
// H200 (dev/VARIANTS.md 40, 65): 8-32 KiB tiles (their partials grow as the data shrinks), and
// persistent CTAs with two buffers of 32, 48 or 64 KiB, all lost. A CTA's threads are [rows a
// pass x channels of the tile], at most kChannelsLastThreads.
inline constexpr int kChannelsLastThreads = 256;
inline constexpr int64_t kChannelsLastTileBytes = 64 * 1024;
// The resident form (a sample's tiles on chip at once, a tile a CTA): CTAs an SM at most (its launch
// bound), the threads of a CTA alone on its SM, and the static shared memory beside each CTA's
// buffer (a column sum's cell a thread, a barrier and the lanes' sums).
inline constexpr int kChannelsLastResidentCtasPerSm = 3;
inline constexpr int kChannelsLastResidentWideThreads = 512;
// Its channel blocks (a CTA holds every row of whole slices' channels): CTAs an SM at most (its
// launch bound), two, as the three kernels' elementwise pass straight from global memory, whose
// threads too hold a coefficient set per channel of their 16-byte run.
inline constexpr int kChannelsLastBlockCtasPerSm = 2;
// The most CTAs whose tiles split a block's rows (PlanOptions force_ctas_per_slice), each CTA's
// partials exchanged through L2; the most the planner takes (groups of 2-8 measured, dev/VARIANTS.md
// 109); and its cost of a group's exchange, a round of the groups: the arrivals' memset, the L2
// round trip and the combine, 1.1-1.7 us on the H100 (as much as staging 13-20 KiB a CTA in its model,
// kChannelsLastBlockRoundBytes below).
inline constexpr int kChannelsLastBlockMaxGroup = 16;
inline constexpr int kChannelsLastBlockMostGroup = 8;
inline constexpr int64_t kChannelsLastBlockExchangeBytes = 20 * 1024;
// The planner's cost of a block (planner.cpp plan_channels_last_blocks): the bytes the busiest SM
// stages, plus this many for each round of its CTAs (a block's barriers, reduction and launch),
// fitted to the H200 (dev/VARIANTS.md 67: blocks of 40, 80 and 256 channels on 16-bit InstanceNorm
// of 8x8 positions ran 1.94 : 1.52 : 1, the model 1.94 : 1.50 : 1).
inline constexpr int64_t kChannelsLastBlockRoundBytes = 13 * 1024;
// Where the three kernels' streamed kernel applies (Plan::stream_applies), the narrowest part of a
// row a channel block takes where it is not the whole row: blocks of 16- and 32-byte runs of 128-
// and 256-byte rows ran 1.4-1.7x and 1.1-1.15x slower than the stream, both passes (a warp's load
// a separate sector of each of 32 or 16 rows, the rest of each read by the sample's other blocks);
// where nothing streams, blocks of 16-80-byte runs ran 1.2-2.3x faster than the three kernels
// (dev/VARIANTS.md 100, H100).
inline constexpr int64_t kChannelsLastBlockMinRunBesideStreamBytes = 64;
inline constexpr int channels_last_static_reserve(int threads) { return threads * 32 + 2048; }
// channels_last's cluster form (kernels/channels_last.cuh channels_last_cluster_kernel): a cluster
// of CTAs holds a sample's x, each CTA its rows in shared memory (kChannelsLastClusterPieces bulk
// copies, each refilled with the next sample's rows once written) and, the forward's, the rest in its
// threads' registers (register_runs 16-byte runs a thread at most). C up to
// kChannelsLastClusterMaxChannels (its static cells: static_bytes at most). The planner takes it
// where a sample holds kChannelsLastClusterMinSampleBytes of x or more (up to the largest cluster's
// share), the batch fills min_rounds rounds of the clusters resident at once and the elements are
// min_element_bytes wide or wider. Measured in the library (H100, sessions 90-91, 32-128 samples
// of 1-2 MiB, C 32-64; bench/results/2026-12-07-cl-cluster, 2026-12-07-dybatch):
//   backward  one CTA an SM, at most tile_bytes of x in shared memory, dy read twice
//             (kChannelsLastClusterDyBatch runs in flight a thread): float32 1.64x of 1.5 copies
//             against the streamed kernel's 1.73 (2 MiB), 1.77 against 1.78 (1 MiB); bfloat16 at
//             four runs in flight (no spills) 1.67-1.69 against 1.71-1.72 where C = 32 or samples
//             of 1 MiB, but 1.96-1.98 against 1.74-1.81 on 2 MiB samples of 64 channels (session
//             91), so the rule leaves the 16-bit types to the streamed kernel (session 87's probe,
//             two sums a channel, ran bfloat16 at 1.44-1.56);
//   forward   two CTAs an SM, each holding what its share of the SM's shared memory takes and the
//             rest in registers, one pass of sums around a shift and one cluster barrier: 1.20-1.57x
//             a copy against the streamed kernel's 1.58-1.65 (float32 1.20 and 1.32, bfloat16
//             1.36-1.57); on 8 samples of 2 MiB session 87's probe ran 2.7 against 2.3.
struct ChannelsLastClusterShape {
  int threads;
  int ctas_per_sm;
  int register_runs;
  int64_t tile_bytes;  // x in a CTA's shared memory at most (beside what its share of the SM allows)
  int64_t static_bytes;
  int64_t min_rounds;
  int sum_terms;  // float32 sums a channel a warp leaves in shared memory (kernels/channels_last.cuh ClusterSums)
  int min_element_bytes;  // the rule's narrowest element
};
inline constexpr ChannelsLastClusterShape channels_last_cluster_shape(bool backward) {
  return backward ? ChannelsLastClusterShape{512, 1, 0, 128 * 1024, 16 * 1024, 4, 3, 4}
                  : ChannelsLastClusterShape{256, 2, 8, 128 * 1024, 10 * 1024, 2, 2, 2};
}
template <bool kBackward>  // (the kernel's, as a constant)
inline constexpr ChannelsLastClusterShape kChannelsLastClusterShape = channels_last_cluster_shape(kBackward);
inline constexpr int kChannelsLastClusterPieces = 4;
// dy's runs in flight a thread in the backward: 8 of float32; 4 of the 16-bit types, whose 8 took
// 128 registers and spilled 248 bytes (2.31-2.59x of 1.5 copies on an H100; 1.67-1.98 at 4).
template <int kElementBytes>
inline constexpr int kChannelsLastClusterDyBatch = kElementBytes == 2 ? 4 : 8;
inline constexpr int kChannelsLastClusterMaxChannels = 128;
inline constexpr int kChannelsLastClusterMaxCtas = 16;
inline constexpr int64_t kChannelsLastClusterMinSampleBytes = int64_t{1} << 20;
// Where the batch takes more than one round of the clusters, cluster k of K waits k x this spread / K
// SM cycles before its first load (Plan::stagger_cycles), as kSharedStaggerCycles spreads
// shared_resident's groups: started together, the clusters sum, exchange and write in step, and the
// memory idles through their sums and barriers. The late clusters are those with a sample fewer
// where the rounds are not whole. Measured on an H100 (dev/VARIANTS.md 119, inorm-bench's staggerK,
// one process; forward x copy, backward x 1.5 copies), at 0 / 300 / 600 / 1200 / 2400 / 3600 cycles
// apart: 14 clusters of 16 forward: cl-bf16 1.46 / 1.37 / 1.35 / 1.27 / 1.26 / 1.24, 32x64x128x128
// bfloat16 1.54 / 1.49 / 1.47 / 1.32 / 1.26 / 1.29, 64x32x128x128 float32 1.18 / 1.12 / 1.11 /
// 1.13 / 1.10 / 1.11; 30 clusters of 8 forward: 1 MiB bfloat16 samples 1.35 / 1.30 / 1.16 / 1.12 /
// 1.22 / 1.32, float32 1.29 / 1.11 / 1.16 / 1.08 / 1.25 / 1.56; backward, float32: 7 clusters of 16
// 1.64 / 1.63 / 1.62 / 1.61 / 1.62 / 1.55, 15 clusters of 8 1.76 / 1.75 / 1.74 / 1.71 / 1.65 /
// 1.71. The best spread is 30,000-40,000 cycles whatever the count (about a round of the samples);
// the H200's faster memory shortens a round, so the spread is the lower end. At this spread (session
// 92's second call): forward 1.07-1.25 where none gave 1.30-1.55 (cl-bf16 1.47 -> 1.21),
// float32's backward 1.55-1.66 where none gave 1.63-1.74.
inline constexpr int64_t kChannelsLastClusterStaggerSpreadCycles = 30000;
// The three kernels' streamed reduction (Plan::stream_parts): consumer warps (a producer warp
// beside them issues the bulk copies), the ring's stages and their bytes; a sample's parts at most,
// the planner's cost of a part beyond its bytes (its CTA sums, check and partials: about 3.5 us a
// part more on cl-bf16, 56 KiB at a CTA's pace), and the least x it streams (dev/VARIANTS.md 93:
// from 128 MiB it ran level or 1-9% faster than the tiles' reduction, below it 1-3% slower, where
// the ring's fill and last parts weigh on one short round).
inline constexpr int kChannelsLastStreamWarps = 8;
inline constexpr int kChannelsLastStreamThreads = (kChannelsLastStreamWarps + 1) * 32;
inline constexpr int kChannelsLastStreamCtasPerSm = 2;  // at most (its launch bound)
inline constexpr int kChannelsLastStreamRun = 4;        // channels a consumer thread loads at once
// Its one pass (float32 sums of a stage's few rows, added into float64) stands where the squares
// around the shift are at most this many times those around the mean (a shift within about eight
// standard deviations of the mean); past it the part's deviations are summed again.
inline constexpr double kChannelsLastStreamMaxSquares = 64;
inline constexpr int kChannelsLastStreamStages = 5;
inline constexpr int64_t kChannelsLastStreamStageBytes = 16 * 1024;
// A stage holds each input's rows in turn (x; the backward's x, then dy), this many bytes each; a
// channel's sums in the consumer warps' cells (kernels/channels_last.cuh StreamedSums: two float64
// sums forward, three backward).
INORM_HOST_DEVICE inline constexpr int64_t channels_last_stream_input_bytes(int inputs) {
  return kChannelsLastStreamStageBytes / inputs;
}
INORM_HOST_DEVICE inline constexpr int64_t channels_last_stream_sum_bytes(int inputs) {
  return (inputs + 1) * static_cast<int64_t>(sizeof(double));
}
inline constexpr int64_t kChannelsLastStreamMaxParts = 256;
inline constexpr int64_t kChannelsLastStreamPartCostBytes = 64 * 1024;
inline constexpr int64_t kChannelsLastStreamMinBytes = int64_t{128} << 20;
// The streamed kernel also applies (Plan::stream_applies) where its inputs (x; the backward's x and
// dy) hold this many bytes to this many (the forward's; the backward's), in parts whose CTAs each
// combine at most this many partials (C x parts: every channel of its sample's, a round trip to L2
// for every few), on at least this many CTAs. Forward (dev/VARIANTS.md 94): 32 MiB to 1 GiB of
// 16-bit types and float32 ran 2-19% faster; 2 x 32 x 64^3 float16 in 132 parts, 4224 partials,
// 1% slower than the tiles, in 64 parts 17% faster; 16-32 CTAs 27-170% slower; 16 MiB and below
// 8-20% slower, the seeds' 3.5 and 7 GiB 3-4%. Backward (95): 16 MiB of x and dy each to the
// bfloat16 seed's 3.5 GiB 4-34% faster (cl-bf16 20%), 8 MiB level, the float32 seed's 7 GiB 2.7%
// slower. Where the partials cap leaves half the SMs or more idle (few samples of 64-128
// channels), a CTA an SM ran 4-20% faster in both passes (95).
inline constexpr int64_t kChannelsLastStreamApplyMinBytes = int64_t{32} << 20;
inline constexpr int64_t kChannelsLastStreamApplyMaxBytes = int64_t{1} << 30;
inline constexpr int64_t kChannelsLastStreamApplyMaxBackwardBytes = int64_t{8} << 30;
inline constexpr int64_t kChannelsLastStreamApplyMaxPartials = 2048;
inline constexpr int64_t kChannelsLastStreamApplyMinCtas = 64;
// The three kernels' backward marks its elementwise pass's loads and stores evict-first in L2
// (Plan::evict_first) where x and dy together hold at most this many bytes, so the tiles that pass
// has yet to reach stay there: 6-8% faster on 48 and 64 MiB (cl-c3, cl-3d-fp16), level on 128 MiB,
// slower past it and in the forward (dev/VARIANTS.md 93).
inline constexpr int64_t kChannelsLastEvictFirstMaxBytes = int64_t{64} << 20;
// Where the applying streamed kernel (Plan::stream_applies) takes L2 hints (Plan::evict_first, set
// by a caller: not the planner's, dev/VARIANTS.md 97), each part's rows past the ring's and a share
// of this many bytes (all CTAs together) from its end are read evict-first, and so are the rows read
// again and y, so that L2 keeps the rows the second read is to find there.
inline constexpr int64_t kChannelsLastStreamL2KeepBytes = int64_t{32} << 20;
// Partials a lane of an op's combine_split loads before it adds any (kernels/forward_op.cuh). Where
// lanes take many each (channels_last: a slice's up to thousands of tile partials over the finish
// kernel's 128 threads, or over the resident form's groups of four) four keep loads in flight;
// split_pipelined combines once a slice with its whole CTA, and its registers are tight: four
// spilled two in its float16 forward and 16-bit backward with an activation, and SD VAE's
// GroupNorm + SiLU forward ran 4% slower (dev/VARIANTS.md 58).
inline constexpr int kCombineInFlight = 4;
inline constexpr int kSplitCombineInFlight = 1;
inline constexpr int kChannelsLastFinishThreads = 128;
inline constexpr int64_t kChannelsLastFinishGrid = 16384;  // CTAs of the finish kernel at most (each loops)
// The finish kernel takes a slice a warp where it has at most this many partials (its channels'
// tiles), else a slice a CTA (kernels/channels_last.cuh channels_last_finish_kernel).
inline constexpr int64_t kChannelsLastFinishWarpParts = 256;
// Bytes of a slice's elementwise coefficients in the workspace (the largest op's: the float64
// backward with an activation).
inline constexpr std::size_t kSliceCoefficientBytes = 80;

// Plans kept by plan_forward / plan_backward for the current device (plan_cache.h): far more
// shapes than a network runs, few enough that dropping them all when full costs nothing noticeable.
inline constexpr std::size_t kPlanCacheCapacity = 4096;

}  // namespace inorm::detail
