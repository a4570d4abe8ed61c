#!/usr/bin/env bash
# Session 53, device call 6 (one H200): run 5's racecheck still flagged the narrow tile's
# reads against the next cp.async writes with every consumer thread arriving on `empty`; now
# every producer thread of the narrow instance also waits on `empty` itself (no warp-0 wait +
# named barrier). The fp8 tests, racecheck and memcheck on the narrow-instance test, then the
# fp8 grid and the 16-head sweep in one process with our bf16 path and FlashInfer fa3.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k narrow_instance"
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s53-h200-fp8" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s53-h200-sweep"
