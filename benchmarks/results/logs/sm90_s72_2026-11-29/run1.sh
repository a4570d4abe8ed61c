#!/usr/bin/env bash
# Session 72, device call 1 (one H200): the sparse FlashMLA call writes lse [b, h_q, s_q] in
# place (lse_seq_tokens; no temporary, no transposing copy); the routed cutlass_mla_decode
# (sgl-kernel's call, a plan kernel every call) timed against the wrapper and fa3 on the
# grid's one-token rows, num_kv_splits -1 (library) and 1 (sgl-kernel's default).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 240 python -m pytest tests/test_sparse.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 300 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_cutlass1,fi_fa3 --heat-s 3 --tag s72-h200-cutlass-api"
