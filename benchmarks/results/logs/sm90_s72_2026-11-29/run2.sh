#!/usr/bin/env bash
# Session 72, device call 2 (one H200): the routed cutlass_mla_decode on the balanced GPU plan
# (device_plan/balanced.cuh, written each call into the caller's workspace; the uniform split
# plan only for a hand-sized workspace too small for it); the sparse FlashMLA call's lse fix
# for s_q = 1. Tests, memcheck on the routed path, then the grid against the wrapper and fa3.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest tests/test_sparse.py tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 120 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'graph or too_small'" \
  "timeout 240 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,fi_fa3 --heat-s 3 --tag s72-h200-cutlass-balanced"
