#!/usr/bin/env bash
# Session 65, call 6: every GPU test and the sanitizers (memcheck, racecheck, synccheck, initcheck
# on GpuSanitize.*) of the build in .carry/s65e.
cd "$(dirname "$0")/../../.."
OUT=$OUT/e INORM_PREBUILT=.carry/s65e INORM_ONLY=tests,sanitize INORM_COMMIT=$(cat .carry/s65e/commit) \
  scripts/gpu-check.sh
