#!/usr/bin/env bash
# Session 45, device call 7 (one GPU): e4m3 cp.async tiles issued by each producer thread as
# soon as it sees the stage free, between the previous tile's widening phases
# (MLAW_SM90_E4M3_EARLY_ISSUE=1, the candidate): the whole GPU suite, racecheck on the small fp8
# cases (page 1 and 16 among them) and a sparse fp8 case, memcheck on the small fp8 cases; A/B of
# the dense fp8 kernel at page 1 against run 5's build (lib:), its trace, and the sparse rows
# against the same tree built with the flag 0.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --error-exitcode 1"
K="test_wrapper_fp8_cache and bf16-128-1-2048"
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 260 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 90 python $B/check_sm90_dev.py --fp8 --ab-only --page 1 --ab-cases grid --variant=lib:.cache/variant/prev/{dt}.so" \
  "timeout 60 python $B/bench_sparse.py --quick --fp8 --variant=-DMLAW_SM90_E4M3_EARLY_ISSUE=0"
