#!/usr/bin/env bash
# Session 53, device call 1 (one H200): the narrow tile reading the e4m3 bytes as they land
# (no widening of a narrow item's tiles; K and V fragments widened in registers from the
# swizzled e4m3 rows), the e4m3 latent boxes in the 128-byte swizzle (every e4m3 library).
# The fp8 tests (dense and sparse), the fp8 checks, and A/Bs against 2dffe63's e4m3 libraries
# (`head53`): a speedup below 1 means this build (the jit cache) is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -k 'fp8 or e4m3'" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/head53/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/head53/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/head53/{dt}.so"
