#!/usr/bin/env bash
# Session 44, device call 6 (one GPU): back to run 2's conversion (qkeep); O is no longer zeroed
# before an item's tiles (the first P V k-step overwrites it: issue_pv's first), which at B=1
# put ~130 instructions from a cold instruction cache between an e4m3 cache's conversion and the
# first tile's wait (run 5, no-conversion probe: ~900 clocks there). All sm90 kernels change.
# The fp8 checks; the sm90 tests of the wrapper, backend, fp8 and sparse files; A/B against the
# 16-bit build before it (old16) and against run 2's e4m3 build (qkeep); B=1 traces.
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-25} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py tests/test_sm90_backend.py tests/test_fp8_kv.py tests/test_sparse.py -k 'not sm80'" \
  "timeout 90 $C --ab-only --variant=lib:.cache/jit/old16/{dt}.so --ab-cases split" \
  "timeout 120 $C --ab-only --variant=lib:.cache/jit/old16/{dt}.so --ab-cases grid" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/qkeep/{dt}.so --ab-cases split" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/t_noz/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_noz/{dt}.so"
