#!/usr/bin/env bash
# Session 53, device call 4 (one H200): the final libraries (narrow tiles read as they land,
# the producer's 0-spill bookkeeping, narrow items from 2 tiles): the whole GPU suite,
# racecheck and memcheck on the narrow instance's test, the fp8 checks, and A/Bs against
# 2dffe63's e4m3 libraries (`head53`): a speedup below 1 means the final build (the jit cache)
# is faster.
B=benchmarks
V=.cache/variant
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k narrow_instance"
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/head53/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/head53/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/head53/{dt}.so"
