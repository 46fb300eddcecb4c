#!/usr/bin/env bash
# A change timed against an older commit on one GPU machine: the older commit's inorm-bench is built
# beside this tree's (both at once, all cores), then each suite runs old then new, AB_ROUNDS times,
# every row checked against float64 by inorm-bench itself. scripts/ab_compare.py tabulates $OUT.
#
#   OUT=gpu-out/r1 AB_OLD=.carry/old.tar.gz scripts/ab-bench.sh SUITE[:forward|backward|both]...
#
# AB_OLD            the older commit as `git archive --format=tar.gz <commit>` (a device copy has no .git)
# AB_OLD_BENCH      instead of AB_OLD, the older commit's inorm-bench built on a machine without a GPU
#                   (sm_90; plain, .gz or .xz): nothing is built for it here
# AB_NEW_BENCH      likewise this tree's inorm-bench: this tree is then not built (nor AB_TARGETS).
#                   scripts/gpu-check.sh's INORM_PREBUILT says how to build them small to carry
# AB_OLD_COMMIT     its id, recorded in its rows (a prebuilt binary carries its own; one built from
#                   an archive, outside git, records "old" without it)
# AB_ROUNDS         rounds of every suite and pass (default 2)
# AB_TARGETS        this tree's other build targets, e.g. "inorm_gpu_tests inorm_cpu_tests" for
#                   scripts/gpu-check.sh's tests part to reuse (its build dir is build-gpu too)
# AB_BUILD_LIMIT    seconds either build may take (default 400)
# AB_PACK           where set, $OUT is packed there (tar.gz) after every step: the device tool brings
#                   back at most 8 files, and a call cut off at its limit keeps what was packed
# INORM_COMMIT      this tree's commit, recorded in its rows (inorm-bench reads it at run time)
# Each run writes $OUT/<suite>-<pass>-<old|new>-<round>.{json,md,log}; steps.txt has every step's
# status and the seconds since the start.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-gpu-out}
[ -n "${AB_OLD:-}${AB_OLD_BENCH:-}" ] || { echo "ab-bench.sh: set AB_OLD (a git archive tar.gz) or AB_OLD_BENCH" >&2; exit 2; }
rounds=${AB_ROUNDS:-2}
limit=${AB_BUILD_LIMIT:-400}
[ $# -gt 0 ] || { echo "ab-bench.sh: name at least one suite" >&2; exit 2; }
for source in ${AB_OLD_BENCH:-${AB_OLD:-}} ${AB_NEW_BENCH:-}; do
  [ -f "$source" ] || { echo "ab-bench.sh: $source not found" >&2; exit 2; }
done
mkdir -p "$out"
steps=$out/steps.txt
pack() { [ -n "${AB_PACK:-}" ] && tar czf "$AB_PACK" -C "$(dirname "$out")" "$(basename "$out")"; return 0; }
record() { echo "rc=$1 $2 $SECONDS s" >>"$steps"; pack; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$out/gpu.txt" 2>&1

old_dir=/tmp/ab-old
old_binary=$old_dir/build/inorm-bench
new_binary="build-gpu/inorm-bench"
unpack() {  # unpack SOURCE DESTINATION: a prebuilt binary, plain, gzipped or xz-packed
  mkdir -p "$(dirname "$2")" &&
  case $1 in *.xz) xz -dc "$1" ;; *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac >"$2" && chmod +x "$2"
}
rm -rf "$old_dir" && mkdir -p "$old_dir"
if [ -n "${AB_OLD_BENCH:-}" ]; then
  unpack "$AB_OLD_BENCH" "$old_binary"
  record $? unpack-old
else
  tar xzf "$AB_OLD" -C "$old_dir"
  (cmake -S "$old_dir" -B "$old_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
   timeout "$limit" cmake --build "$old_dir/build" --parallel "$(nproc)" --target inorm-bench) \
    >"$out/build-old.log" 2>&1 &
  old_build=$!
fi
if [ -n "${AB_NEW_BENCH:-}" ]; then
  new_binary=/tmp/ab-new/inorm-bench
  unpack "$AB_NEW_BENCH" "$new_binary"
  record $? unpack-new
else
  # shellcheck disable=SC2086  # AB_TARGETS is a list of targets
  (cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release &&
   timeout "$limit" cmake --build build-gpu --parallel "$(nproc)" --target inorm-bench ${AB_TARGETS:-}) \
    >"$out/build.log" 2>&1
  record $? build
fi
if [ -z "${AB_OLD_BENCH:-}" ]; then
  wait "$old_build"
  record $? build-old
fi

# inorm-bench reads INORM_COMMIT at run time: the caller's names this tree; the old build's rows
# take AB_OLD_COMMIT, else a prebuilt binary's own, else "old" (built from an archive outside git).
old_env=(env -u INORM_COMMIT)
[ -n "${AB_OLD_COMMIT:-}" ] && old_env=(env "INORM_COMMIT=$AB_OLD_COMMIT")
[ -z "${AB_OLD_COMMIT:-}${AB_OLD_BENCH:-}" ] && old_env=(env INORM_COMMIT=old)

status=0
for ((round = 1; round <= rounds; round++)); do
  for spec in "$@"; do
    suite=${spec%%:*}
    passes=forward
    [[ $spec == *:* ]] && passes=${spec##*:}
    [ "$passes" = both ] && passes="forward backward"
    name=$(basename "$suite" .json)
    for pass in $passes; do
      flag=
      [ "$pass" = backward ] && flag=--backward
      for build in old new; do
        binary=$new_binary
        run_env=(env)
        [ $build = old ] && binary=$old_binary && run_env=("${old_env[@]}")
        run=$out/$name-$pass-$build-$round
        timeout 120 "${run_env[@]}" "$binary" $flag --suite "$suite" --json "$run.json" --markdown "$run.md" >"$run.log" 2>&1
        rc=$?
        [ $rc -eq 0 ] || status=1
        record $rc "$name $pass $build $round"
      done
    done
  done
done
cat "$steps"
exit $status
