#!/usr/bin/env bash
# One device call: install carried wheels, then run the given steps, logging under $OUT: each
# step's output in stepN.log, packed at the end with summary.txt into $OUT/logs.tar (one file
# to fetch; unpack it into the session's logs folder).
# Usage (on the device): bash benchmarks/device_run.sh "pytest tests/test_merge.py -m gpu" ...
# Carry the CUTLASS wheel (.whl) in every call that loads a kernel, even with every library
# prebuilt: the JIT cache's key holds CUTLASS's include path (jit/builder.py compile_flags), so
# without it no cached library loads (logs/sm90_s60_2026-11-29 run 7). The 64 MiB a call counts
# the tracked files on disk (~31 MB in session 60) with the carried paths.
set -uo pipefail
# The JIT cache packed here (tar -C .cache -cf - jit | xz > .cache/jit.txz: ~35 MB of libraries
# compress to ~3 MB, so a call can carry every library of the suite within its 64 MiB).
if [ -f .cache/jit.txz ]; then tar -C .cache -xJf .cache/jit.txz; fi
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export MLA_WRAPPER_CACHE_DIR=$PWD/.cache/jit MLA_WRAPPER_RESULTS_DIR=$OUT PYTHONUNBUFFERED=1
export FLASHINFER_CUDA_ARCH_LIST=9.0a
# FlashInfer's JIT cache (the fa3 peer compiles on first use): carried in .cache/fiws when this
# machine has one (unpack $OUT/fiws.tar of an earlier call there), returned in $OUT/fiws.tar.
export FLASHINFER_WORKSPACE_BASE=$PWD/.cache/fiws
trap 'tar -C .cache -cf $OUT/fiws.tar --exclude="*.o" --exclude="*.cu" fiws 2>/dev/null' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $OUT/gpu.txt
i=0
for step in "$@"; do
  i=$((i+1))
  echo "=== step $i: $step" | tee -a $OUT/summary.txt
  start=$(date +%s)
  bash -c "$step" > $OUT/step$i.log 2>&1
  rc=$?
  echo "=== step $i rc=$rc in $(( $(date +%s) - start ))s" | tee -a $OUT/summary.txt
  tail -n ${TAIL:-15} $OUT/step$i.log
done
(cd $OUT && tar -cf logs.tar step*.log summary.txt && rm -f step*.log)
