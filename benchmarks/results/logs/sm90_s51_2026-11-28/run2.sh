#!/usr/bin/env bash
# Session 51, device call 2 (one H200): the e4m3 cache's narrow instance (<= 16 heads: items of
# <= 16 valid rows on mma.sync over those rows, mla_kernel.cuh narrow_tiles), now without spills
# (run 1's build spilled ~250 bytes: its addresses hoisted out of the item loop). The jit cache holds
# the candidate; .cache/variant/base51 the e4m3 libraries of cc83373 (an A/B "speedup" below 1
# means the candidate is faster). fp8 tests, the 14 checks, A/Bs, sanitizers on small fp8 cases.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -x" \
  "timeout 150 $C --page 64" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/base51/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/base51/{dt}.so" \
  "timeout 100 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/base51/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases boxes --ab-dtype fp16 --variant=lib:$V/base51/{dt}.so" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1 --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1 --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
