#!/usr/bin/env bash
# Session 59, device call 1 (one H200): tall_item exchanges the scorer warps' row maxima across
# the tile's kBarMax and the row sums across kBarP2 (all 256 consumer threads), no 128-thread
# barrier of the scorer alone left (session 58's racecheck hazards). First a 20-line probe of
# racecheck itself (.cache/rc/rc.cu, built here: a 256-thread exchange ordered by 256-thread
# barriers, with and without a 128-thread barrier of one warpgroup in between), then racecheck
# and memcheck on the small fp8 cases with the tall instance on, the fp8 checks, the tall and
# graph tests, and the A/B against session 58's tall build (variant = the old library; above
# 1 means the old one is faster).
B=benchmarks
export MLA_WRAPPER_SM90_TALL=1
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 60 $S --tool racecheck .cache/rc/rc" \
  "timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 80 python $B/check_sm90_dev.py --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'tall or graph'" \
  "timeout 110 python $B/check_sm90_dev.py --ab-only --fp8 --page 64 --ab-cases h32 --variant=lib:.cache/variant/tall58/{dt}.so" \
  "timeout 110 python $B/check_sm90_dev.py --ab-only --fp8 --page 1 --ab-cases h32 --variant=lib:.cache/variant/tall58/{dt}.so"
