#!/usr/bin/env bash
# Session 45, device call 1 (asked for an H100): session 44's final tree (the kernels unchanged
# since its run 7): the whole GPU suite (its last H100 run was session 41), racecheck on the
# small 16-bit and fp8 cases, memcheck on the small fp8 cases, then the full grid with every
# peer in one process (the O change of session 44 over every row) and the fp8 sweep.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 230 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s45-h100-full" \
  "timeout 60 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s45-h100-sweep" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
