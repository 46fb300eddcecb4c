#!/usr/bin/env bash
# Session 66, call 3 (.carry/s66b, 0ecae2b): few samples in more parts than 2048 partials a CTA
# allow, one CTA an SM (cl-apply1-p33 on four samples, -p66 on two, -p132 on one) against the
# planner's (cl-apply1) and the tiles (cl-apply0): session 65's few.json forward, and this
# folder's few.json backward.
cd "$(dirname "$0")/../../.."
set -u
W=$OUT/c; mkdir -p $W
R=bench/results/2026-12-04-h200-cl-backward
tar xJf .carry/s66b/pk.tar.xz -C /tmp
export INORM_COMMIT=$(cat .carry/s66b/commit)
SECONDS=0
V=cl-apply0,cl-apply1,cl-apply1-p33,cl-apply1-p66,cl-apply1-p132
timeout 150 /tmp/inorm-bench --suite bench/results/2026-12-04-h200-cl-apply/few.json --variants $V \
  --markdown $W/few-forward.md --json $W/few-forward.json > $W/few-forward.log 2>&1
echo "rc=$? few forward $SECONDS s" >> $W/run.log
timeout 150 /tmp/inorm-bench --backward --suite $R/few.json --variants $V \
  --markdown $W/few-backward.md --json $W/few-backward.json > $W/few-backward.log 2>&1
echo "rc=$? few backward $SECONDS s" >> $W/run.log
cat $W/run.log
