#!/usr/bin/env bash
# Session 32, device call 11 (H100): the shipped build (paced tiles by device: every tile on an
# H100): the checks; the paced-load and KV-map GPU tests (paced boxes and tiles per device);
# the middle, memory and latency rows against fa3 and FlashMLA after a read flush.
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k 'paced or kv_maps'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --flush clean --cases middle,memory,latency --tag s32-h100-clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
