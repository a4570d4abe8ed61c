#!/usr/bin/env bash
# Session 59, device call 3 (one H200): cluster pairs for the tall instance (tall.cuh
# tall_pair_exchange: the two halves of a kv range trade the fp32 O^T halves each stores, with
# the rows' sum parts and maxima, through the first stage), and tall plans for every fp8 TP4
# decode batch (the batch rule dropped for this run). The fp8 checks and a racecheck / memcheck
# on the small fp8 cases (a 20-request tall case with pairs among them), the tall and graph
# tests, then the A/B of tall against 64-row plans over batch sizes 1-128 (variant = the 64-row
# plans, MLA_WRAPPER_SM90_TALL=0: a speedup below 1 means the tall plans are faster).
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=env:MLA_WRAPPER_SM90_TALL=0"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "timeout 80 python $B/check_sm90_dev.py --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'tall or graph'" \
  "timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 120 $C --page 64" \
  "timeout 120 $C --page 1"
