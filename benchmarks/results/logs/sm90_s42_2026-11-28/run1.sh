#!/usr/bin/env bash
# Session 42, device call 1 (one GPU): the fp8 cache with fp16 queries (its widening is the
# e4m3 -> f16 cvt alone) against the fp16 16-bit path, and the bf16 rows beside fa3 (does the
# widening's cost bound the fp8 compute rows?); then the GPU tests over session 41's untested
# CPU-only refactors (make_fp8_batch, one _impl.plan call, one use_module call).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 100 python $B/bench_decode.py --backends sm90,sm90_fp8 --dtype fp16 --cases compute,memory,middle --tag s42-fp16" \
  "timeout 100 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases compute,memory,middle --tag s42-bf16" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -x"
