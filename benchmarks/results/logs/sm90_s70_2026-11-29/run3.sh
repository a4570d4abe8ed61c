#!/usr/bin/env bash
# Session 70, device call 3 (one H200): the balanced plan with boundaries snapped only within
# cap / 8 of a request end (run 2: ragged H=128 1.48x the wrapper's GPU time, groups of up to
# 1.6 shares): its invariants tests and racecheck, diag_fmla.py's table again, and a cProfile
# of the dense path's host time (run 2: 70-140 us a call against the wrapper's 11-21).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-60} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 150 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants'" \
  "timeout 200 python benchmarks/results/logs/sm90_s70_2026-11-29/diag_fmla.py" \
  "timeout 120 python benchmarks/results/logs/sm90_s70_2026-11-29/diag_host.py"
