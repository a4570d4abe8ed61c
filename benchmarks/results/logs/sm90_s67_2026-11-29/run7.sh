#!/usr/bin/env bash
# Session 67, device call 7 (one H200): racecheck on the tall instance's MTP cluster pairs
# (run 6's racecheck timed out on its 11th small case, H=8 x 4 with every batch tall): the new
# test's 3-request case (16 x 2 rows, MLA_WRAPPER_SM90_TALL=all: pairs writing partial slots).
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 240 $S --tool racecheck python -m pytest tests/test_fp8_kv.py -m gpu -q -k 'test_fp8_tall_mtp and lens6'"
