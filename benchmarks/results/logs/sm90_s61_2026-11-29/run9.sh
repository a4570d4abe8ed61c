#!/usr/bin/env bash
# Session 61, device call 9 (one H200): after the review's helper (common/q_rows.cuh
# store_row_lse / lse_out_base; of every library only the e4m3 ones' SASS changed, in the tall
# instance's lse stores): the fp8 tests and the fp8 checks with the default rule and with
# MLA_WRAPPER_SM90_TALL=all.
B=benchmarks
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 40 python $B/check_sm90_dev.py --backend sm90 --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 40 python $B/check_sm90_dev.py --backend sm90 --fp8"
