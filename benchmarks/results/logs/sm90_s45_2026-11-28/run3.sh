#!/usr/bin/env bash
# Session 45, device call 3 (one GPU): the e4m3 cp.async tiles' source lines prefetched into L2
# before the previous tile's widening (MLAW_SM90_E4M3_PREFETCH_LINES=1, the candidate default):
# the whole GPU suite (the fixed cache-op tests included), memcheck on the cache ops, memcheck and
# racecheck on a small sparse fp8 case, then A/Bs against the build without it (=0, SASS equal
# to run 2's): the sparse benchmark's quick rows and H=16 rows with the fp8 cache (the bf16
# sparse library's variant has equal SASS: a null A/B), and the dense fp8 kernel at page 1.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
K="test_wrapper_fp8_cache and bf16-128-1-2048"
V="-DMLAW_SM90_E4M3_PREFETCH_LINES=0"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 260 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_cache_ops.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 150 python $B/bench_sparse.py --quick --fp8 --variant '$V'" \
  "timeout 120 python $B/check_sm90_dev.py --fp8 --ab-only --page 1 --ab-cases grid --variant=lib:.cache/variant/nolines/{dt}.so"
