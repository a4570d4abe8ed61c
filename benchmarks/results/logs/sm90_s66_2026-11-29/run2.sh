#!/usr/bin/env bash
# Session 66, device call 2 (one H200): the narrow tiles with a softmax state per consumer
# warpgroup (warpgroup g scores and multiplies tokens 32 g .. 32 g + 31 of each tile, its own
# running max and sum, barriers of its 128 threads only; the two states merged at the item's
# end). The candidate is in the JIT cache; `landed` is 4a5aec5's e4m3 library. The fp8 tests and
# checks on the candidate, then A/B: a printed speedup below 1 means the candidate is faster.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/variant/landed/{dt}.so"
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -x -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 90 $C --backend sm90 --fp8" \
  "timeout 70 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 70 $C --ab-only --fp8 --ab-cases memory $V" \
  "timeout 70 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 70 $C --ab-only --fp8 --ab-cases memory $V"
