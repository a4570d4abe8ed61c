#!/usr/bin/env bash
# Session 44, device call 4 (one GPU): run 3's few-rows conversion ran B=1 H=16 ~1000 clocks
# slower than run 2's although each warp did a quarter of the work; its code is ~15 KB against
# ~11 KB. Is the conversion bound by fetching its cold code (B=1: once per kernel)? This tree
# runs q_to_f16 dry (stores sent to red) while the first Q is in flight. The fp8 checks and
# tests (test_fp8_few_query_rows with scores that are not one-hot), A/B against the same build
# without the dry run (nodry) and against run 2's (qkeep) on the split cases, B=1 traces of both.
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -k 'fp8 or e4m3'" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/nodry/{dt}.so --ab-cases split" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/qkeep/{dt}.so --ab-cases split" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/t_dry/{dt}.so" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/t_nodry/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_dry/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_nodry/{dt}.so"
