#!/usr/bin/env bash
# Session 63, device call 7 (one H200): the final tree (052b845's kernels: the narrow items' O
# moved by float4s). The whole GPU suite (the sm80 and cache-ops libraries build here: the
# carried tree's size limit), racecheck and memcheck with MLA_WRAPPER_SM90_TALL=all on the
# small fp8 cases (narrow items of 2-4 tiles among them), racecheck on the small 16-bit ones.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 420 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
