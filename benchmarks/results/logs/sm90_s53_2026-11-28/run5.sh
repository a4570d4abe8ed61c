#!/usr/bin/env bash
# Session 53, device call 5 (one H200): run 4's racecheck flagged the narrow tile's ld.shared
# reads of a stage against the next tile's cp.async writes (the stage released by one arrival
# a warp after __syncwarp). Now every consumer thread of the narrow instance arrives on
# `empty` (its count 256; its wgmma path's lane 0 arrives for 32). The fp8 tests, racecheck and
# memcheck on the narrow-instance, NaN-code (page 1) and few-query-rows tests, the fp8 checks,
# and A/Bs against run 4's libraries (`lane0`): a speedup below 1 means this build is faster.
B=benchmarks
V=.cache/variant
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance or nan_codes or few_query_rows'"
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/lane0/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases split --variant=lib:$V/lane0/{dt}.so"
