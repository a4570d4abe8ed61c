#!/usr/bin/env bash
# Session 58, device call 4 (one H200): run 3's racecheck reported hazards in tall_item (the
# scorer's shared-memory writes against the other warpgroup's reads across the 256-thread named
# barriers); this build has a __syncwarp() before each of tall_item's named barriers. racecheck
# and memcheck on the small fp8 cases (the tall case among them), then the tall tests.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 100 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'tall or graph'"
