#!/usr/bin/env bash
# Session 58, device call 1 (one H200): the e4m3 kernel's tall instance (sm90/tall.cuh: plans of
# 32-row tiles for 17-32 heads, both GEMMs transposed). The fp8 and 16-bit checks (an H=32 case
# added), the fp8 GPU tests (the new tall tests and the H=32 CUDA-graph replans), then A/Bs of
# the tall plans against 64-row plans on the same tensors: the default wrapper planned with
# MLA_WRAPPER_SM90_TALL=0 (64-row plans, the previous instances), the variant with it on; a
# speedup above 1 means the tall instance is faster.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8"
V="--variant=env:MLA_WRAPPER_SM90_TALL=1"
export MLA_WRAPPER_SM90_TALL=0
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=1 timeout 80 python $B/check_sm90_dev.py --fp8" \
  "timeout 80 python $B/check_sm90_dev.py" \
  "MLA_WRAPPER_SM90_TALL=1 timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py tests/test_sm90_backend.py" \
  "timeout 110 $C --page 64 --ab-cases h32 $V" \
  "timeout 110 $C --page 1 --ab-cases h32 $V" \
  "timeout 100 $C --page 64 --ab-cases h64mtp $V" \
  "timeout 60 $C --page 64 --ab-cases paced_heads $V" \
  "timeout 100 python $B/check_sm90_dev.py --ab-only --page 64 --ab-cases short --variant=lib:.cache/variant/s58base/{dt}.so"
# Step 8: 16-bit: the combine reads the plan's rows per tile at run time; against 89a3669's
# libraries (`s58base`; the attention kernels' SASS is identical): above 1 = the old one faster
