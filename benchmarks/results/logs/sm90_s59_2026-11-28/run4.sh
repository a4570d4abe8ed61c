#!/usr/bin/env bash
# Session 59, device call 4 (one H200): run 3's tree with the batch rule back (tall plans for
# fp8 TP4 decode batches of more requests than half the CTAs; MLA_WRAPPER_SM90_TALL=all at every
# batch size, with cluster pairs) and tests of tall pairs (40 equal requests, one long request,
# a CUDA graph of capacity 8 with =all). The whole GPU suite, then racecheck with =all on the
# small fp8 cases (run 3's ended with signal 11 in the tall pair case, 0 hazards reported) and
# on the tall pair tests.
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 200 $S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'tall_instance and (lens7 or lens8)'"
