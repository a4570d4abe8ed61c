#!/usr/bin/env bash
# Session 51, device call 3 (one H200): the narrow instance as committed (622a7cd: items of >= 8
# tiles only, kNarrowMinTiles; B=1's short items keep the wgmma path). The jit cache holds bf16
# libraries only (fp16 and sparse parked to fit the carry with FlashInfer); .cache/variant/base51
# the e4m3 libraries of cc83373 (A/B "speedup" below 1: the candidate is faster). fp8 tests,
# A/Bs, the fp8 grid beside our bf16 path and fa3, racecheck / memcheck on the narrow test.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'not fp16'" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/base51/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/base51/{dt}.so" \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s51-h200-fp8" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1 --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance and not fp16'" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1 --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance and not fp16'"
