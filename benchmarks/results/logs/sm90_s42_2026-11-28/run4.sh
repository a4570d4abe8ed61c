#!/usr/bin/env bash
# Session 42, device call 4 (one GPU): issue cost of the instructions an e4m3 widening can use
# (benchmarks/micro/pipe_rates.cu, built here into .cache/pipe_rates), and the fp8 tests on the
# shipped widening (conversion instructions; SASS as session 41's) with the NaN-code test.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  ".cache/pipe_rates" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py"
