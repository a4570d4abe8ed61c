#!/usr/bin/env bash
# Session 51, device call 7 (one H200): the narrow instance's producer issues a TMA tile's boxes
# between the previous tile's widening phases once its stage is free (produce's kEarlyIssue;
# run 6's trace: the stage was free ~1180 clocks before the widening ended). Variants:
# narrow1 = 622a7cd's bf16 e4m3 library (narrow, no early issue);
# an A/B "speedup" below 1 means the candidate (jit cache) is faster. trace52: the candidate
# with -DMLAW_SM90_TRACE=1.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 100 $C --page 64" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/narrow1/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/narrow1/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases boxes --variant=lib:$V/narrow1/{dt}.so" \
  "timeout 60 $C --page 64 --trace 16 128 16384 --variant=lib:$V/trace52/{dt}.so" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1 --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance'" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1 --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance or few_query'"
