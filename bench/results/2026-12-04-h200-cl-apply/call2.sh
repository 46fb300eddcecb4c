#!/usr/bin/env bash
# Session 65, call 2: every GPU test and the sanitizers (memcheck, racecheck, synccheck, initcheck
# on GpuSanitize.*) of the build in .carry/s65b.
cd "$(dirname "$0")/../../.."
OUT=$OUT/c INORM_PREBUILT=.carry/s65b INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s65b/commit) \
  scripts/gpu-check.sh
