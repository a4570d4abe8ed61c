#!/usr/bin/env bash
# Session 42, device call 3 (one GPU): an e4m3 tile widened on the integer and FMA pipes
# (traits.cuh widen_e4m3x8_finite: prmt / shift / mask, then one exact multiply by 2^120 or 2^8;
# NaN codes by the conversion instructions). Run 2's trace put the widening at ~2565 clocks a
# tile, ~8 conversion instructions a 16-byte chunk at a quarter of the FMA rate. fp8 tests
# (every code, NaN codes), checks, memcheck, the grid beside fa3, the fp16 rows, a trace.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 90 python $B/check_sm90_dev.py --fp8" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 128 128 4096 --variant=lib:.cache/jit/tr_fast/{dt}.so" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s42-fast" \
  "timeout 100 python $B/bench_decode.py --backends sm90,sm90_fp8 --dtype fp16 --cases compute,memory --tag s42-fast-fp16" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
