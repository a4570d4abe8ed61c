#!/usr/bin/env bash
# Session 67, device call 4 (one H200): MTP rows of <= 16 heads over an e4m3 cache on the tall
# instance (MLA_WRAPPER_SM90_TALL_MTP=1: 16 x 2 / 8 x 3-4 rows a request in one 32-row item;
# until now 64-row plans). The fp8 GPU tests (the new test_fp8_tall_mtp among them), then the
# `mtp` A/B set against the 64-row plans on the same library (env: variants: no slot bias),
# with the TP4 batch rule and at every batch size (MLA_WRAPPER_SM90_TALL=all).
B=benchmarks
C="timeout 150 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases mtp"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 300 python -m pytest tests/test_fp8_kv.py -m gpu -q -x" \
  "$C --variant=env:MLA_WRAPPER_SM90_TALL_MTP=1" \
  "$C --variant=env:MLA_WRAPPER_SM90_TALL_MTP=1,MLA_WRAPPER_SM90_TALL=all"
