#!/usr/bin/env bash
# Session 52, device call 6 (one H200): the final libraries (03b5cca: narrow_tiles with Q's
# fragments in registers; every other sm90 library's SASS as 6696290's). The fp8 tests (bf16
# and fp16 queries), racecheck and memcheck on the narrow instance's test, the fp8 checks.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k narrow_instance"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 python $B/check_sm90_dev.py --fp8"
