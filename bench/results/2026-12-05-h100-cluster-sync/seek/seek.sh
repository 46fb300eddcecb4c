cd "$(dirname "$0")/../.." 2>/dev/null || true
set -u
W=$OUT/w; mkdir -p $W; SECONDS=0
pack() { tar czf $OUT/w.tgz -C $OUT w; }; trap pack EXIT
git apply dev/cluster-sync/land.patch && git apply dev/cluster-sync/staging.patch || echo "apply failed" >> $W/run.log
cmake -S . -B /tmp/bs -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real > $W/cmake.log 2>&1
timeout 330 cmake --build /tmp/bs --target inorm-bench > $W/build.log 2>&1; echo "build rc=$? $SECONDS s" >> $W/run.log
mkdir -p /tmp/pk && tar xJf .carry/cs/pk.tar.xz -C /tmp/pk
R=bench/results/2026-12-05-h200-small-source
for run in 1 2; do for bin in carried seek; do exe=/tmp/pk/new/inorm-bench; [ $bin = seek ] && exe=/tmp/bs/inorm-bench
  for pass in forward backward; do flag=; [ $pass = backward ] && flag=--backward
    for s in $R/small.json bench/suites/fused.json; do name=$bin-$(basename $s .json)-$pass-$run
      timeout 60 $exe --suite $s $flag --markdown $W/$name.md --json $W/$name.json > $W/$name.log 2>&1; echo "rc=$? $name $SECONDS s" >> $W/run.log; done; done; done; pack; done
cat $W/run.log
