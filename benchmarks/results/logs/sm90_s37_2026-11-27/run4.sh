#!/usr/bin/env bash
# Session 37, device call 4: the final tree (the combine's units dealt to the CTAs in turn, row
# first, warps without rows exiting without waiting but the grid's first, the grid capped by
# occupancy, three CTAs an SM; CtaStart unchanged from session 36). Checks, memcheck /
# racecheck on the small cases, the GPU suite (with the new capacity case of
# test_run_reads_what_the_previous_run_wrote), A/B against session 36's kernel after a read
# flush, and the grid's rows against fa3 ("speedup" < 1: this tree is faster).
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" "$MC" "$RC" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/check_sm90_dev.py $O --ab-cases paced --flush clean" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency,compute,memory --tag s37-h100-grid"
