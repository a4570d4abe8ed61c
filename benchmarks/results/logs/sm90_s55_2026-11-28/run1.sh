#!/usr/bin/env bash
# Session 55, device call 1 (one H200): session 54's MLAW_SM90_NARROW_VOTE=1 (3df470f: one
# 256-thread barrier a narrow tile that also votes whether the lazy max stays, P double-buffered;
# the exact path otherwise), measured for the first time. The jit cache is built with the flag's
# default flipped to 1 (the header edited on this machine and the device copy alike);
# `base` is HEAD's e4m3 library (flag 0), so a printed "speedup" below 1 means the vote build
# is faster. The fp8 tests, racecheck and memcheck on the narrow-instance tests, the fp8 checks,
# A/Bs on the memory, split and short cases.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance or 16-1-300'"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "grep -n '^#define MLAW_SM90_NARROW_VOTE' include/mla_wrapper/sm90/mla_kernel.cuh" \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/base/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/base/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/base/{dt}.so" \
  "timeout 200 $C --ab-only --page 64 --ab-cases short --variant=lib:$V/base/{dt}.so" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T"
