#!/usr/bin/env bash
# Session 54, device call 1 (one H200): the narrow instance's ring in four slots of one e4m3
# tile (two to a stage; a tile its wgmma path widens takes a stage) and its tiles software-
# pipelined (tile it + 1's partial scores beside tile it's P V). The fp8 tests, racecheck and
# memcheck on the narrow-instance tests, the fp8 checks, and A/Bs against session 53's final
# e4m3 libraries (`s53final`): a speedup below 1 means this build (the jit cache) is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k narrow_instance"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/s53final/{dt}.so"
