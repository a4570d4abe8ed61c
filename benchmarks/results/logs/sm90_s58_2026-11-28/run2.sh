#!/usr/bin/env bash
# Session 58, device call 2 (one H200): run 1's tall instance, now chosen only for decode
# batches of more requests than cluster pairs (backends/sm90.py rows_per_tile_for), each tile
# size keeping its own workspace layout; the combine's rows per tile a template parameter again
# (run 1: read from the plan at run time, 16-bit B=1 ran 1.07-1.26x slower). The checks, the fp8
# and sm90 GPU tests, the A/Bs of run 1 (tall plans only at B=128 now; every other function
# of every library SASS-identical to 89a3669's).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8"
V="--variant=env:MLA_WRAPPER_SM90_TALL=1"
export MLA_WRAPPER_SM90_TALL=0
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=1 timeout 80 python $B/check_sm90_dev.py --fp8" \
  "timeout 80 python $B/check_sm90_dev.py" \
  "unset MLA_WRAPPER_SM90_TALL; timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py tests/test_sm90_backend.py" \
  "timeout 110 $C --page 64 --ab-cases h32 $V" \
  "timeout 110 $C --page 1 --ab-cases h32 $V" \
  "timeout 60 $C --page 16 --ab-cases h32 $V"
