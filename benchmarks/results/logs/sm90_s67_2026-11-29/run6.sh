#!/usr/bin/env bash
# Session 67, device call 6 (one H200): MTP rows of <= 16 heads on the tall instance by default
# (MLA_WRAPPER_SM90_TALL_MTP, on): the fp8 GPU tests (test_fp8_tall_mtp with its tolerance-fit
# scales, test_fp8_tall_mtp_plans_in_a_cuda_graph new), racecheck with every batch tall
# (MLA_WRAPPER_SM90_TALL=all: tall MTP pairs) and memcheck on the small fp8 cases (two new MTP
# ones), the `mtp` set at page 1 against the 64-row plans (variant TALL_MTP=0: below 1 the
# default is faster), and the wrapper's GPU tests.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-25} bash $B/device_run.sh \
  "timeout 300 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs" \
  "MLA_WRAPPER_SM90_TALL=all timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 80 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 100 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases mtp --page 1 --variant=env:MLA_WRAPPER_SM90_TALL_MTP=0" \
  "timeout 240 python -m pytest tests/test_wrapper.py -m gpu -q -x"
