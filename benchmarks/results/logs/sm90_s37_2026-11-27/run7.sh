#!/usr/bin/env bash
# Session 37, device call 7: the final tree (run 4's combine, its grid at least one CTA an SM
# after run 6). Checks, memcheck / racecheck on the small cases, the GPU suite, A/B against
# session 36's kernel ("speedup" < 1: this tree is faster), the grid's rows against fa3.
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" "$MC" "$RC" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/check_sm90_dev.py $O --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases short" \
  "python $B/check_sm90_dev.py $O --ab-cases paced" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency,compute,memory --tag s37-h100-final" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --flush clean --tag s37-h100-clean"
