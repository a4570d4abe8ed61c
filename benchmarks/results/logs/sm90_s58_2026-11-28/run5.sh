#!/usr/bin/env bash
# Session 58, device call 5 (one H200): the review's cleanup (tall.cuh's GEMM issue through
# traits.cuh wgmma_part, P's element through ElementTraits::pack; every other function of every
# library SASS-identical). The fp8 checks with the tall instance on, the fp8 and sm90 GPU tests,
# and one A/B of run 2's tall rows.
B=benchmarks
export MLA_WRAPPER_SM90_TALL=0
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=1 timeout 80 python $B/check_sm90_dev.py --fp8" \
  "unset MLA_WRAPPER_SM90_TALL; timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py tests/test_sm90_backend.py tests/test_wrapper.py -k 'fp8 or tall or graph or sm90'" \
  "timeout 110 python $B/check_sm90_dev.py --ab-only --fp8 --page 1 --ab-cases h32 --variant=env:MLA_WRAPPER_SM90_TALL=1"
