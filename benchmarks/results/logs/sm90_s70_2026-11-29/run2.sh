#!/usr/bin/env bash
# Session 70, device call 2 (one H200): the dense-decode tests again (the invariants test made
# its 1500-request case with a 96 GB cache in run 1: OOM-killed), racecheck on the plan kernel,
# and diag_fmla.py (host / GPU / do_bench split of the rows where sm90_fmla lost).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-24} bash benchmarks/device_run.sh \
  "timeout 200 python benchmarks/results/logs/sm90_s70_2026-11-29/diag_fmla.py" \
  "timeout 240 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 150 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants'"
