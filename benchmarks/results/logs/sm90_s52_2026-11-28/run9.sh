#!/usr/bin/env bash
# Session 52, device call 9 (one H200): the final libraries (the narrow tile's pairwise score
# exchange; only the narrow function of the two e4m3 libraries differs from 6696290's SASS).
# The fp8 tests (bf16 and fp16 queries), racecheck and memcheck on the narrow instance's test,
# the fp8 checks, and A/Bs against run 5's build (`qreg`, = 03b5cca): a speedup below 1 means
# the final build (the jit cache) is faster.
B=benchmarks
V=.cache/variant
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k narrow_instance"
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/qreg/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/qreg/{dt}.so"
