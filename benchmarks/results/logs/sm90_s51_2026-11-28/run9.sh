#!/usr/bin/env bash
# Session 51, device call 9 (one H200): the fp8 tests after a new test case (32 heads, 300
# requests: the early-Q instance over an e4m3 cache, which the 16-head case no longer reaches
# now that 16 heads run the narrow instance); the libraries are runs 3-5's (same SASS).
TAIL=${TAIL:-20} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py"
