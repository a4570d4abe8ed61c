#!/usr/bin/env bash
# Session 34, device call 5 (asked for two H200s): on H200s, run 1's H200 steps (the suite then
# also runs the 2-GPU tests); on H100s, the multi-GPU and context-parallel tests of the shipped
# build (0ce2f5f; session 33 ran them on the build before its review commit).
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in
  *H200*) bash "$(dirname "$0")/run1.sh" ;;
  *)
    TAIL=${TAIL:-12} bash benchmarks/device_run.sh "nvidia-smi -L" \
      "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_multi_gpu.py tests/test_distributed.py"
    OUT=${OUT:-/tmp/out}
    tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log ;;
esac
