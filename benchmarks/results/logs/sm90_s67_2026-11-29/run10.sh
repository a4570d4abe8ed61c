#!/usr/bin/env bash
# Session 67, device call 10 (one H200), after the review: the query lengths read in sm90.py
# _tall_mtp only (fp8 MTP plans), no longer for every non-decode plan in planned.py.
TAIL=6 bash benchmarks/device_run.sh "timeout 150 python -m pytest tests/test_fp8_kv.py -m gpu -q -k 'tall or narrow_plans'"
