#!/usr/bin/env bash
# Session 54, device call 4 (one H200): the candidate: session 53's kernel with the narrow
# tile's Q fragments staged per warp in fragment order (six at a time through rows 32-55 of its
# Q-tile block, __syncwarp only) so that each is born in a register quad (run 3's `qfix` staged
# them through warps 0-1 and a 256-thread barrier). The fp8 tests, racecheck and memcheck on
# the narrow-instance tests, the fp8 checks, A/Bs against session 53's final libraries
# (`s53final`; a speedup below 1: this build, the jit cache, is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
T="python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'narrow_instance or 16-1-300'"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "$S --tool racecheck $T" \
  "$S --tool memcheck $T" \
  "timeout 120 $C" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/s53final/{dt}.so" \
  "timeout 200 $C --ab-only --page 64 --ab-cases short --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/qfix/{dt}.so"
