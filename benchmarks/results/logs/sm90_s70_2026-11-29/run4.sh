#!/usr/bin/env bash
# Session 70, device call 4 (one H200): lse_base_e = 2 (FlashMLA's +inf for a row that sees no
# key, written by the kernels: no nan_to_num_ launch) changed common/, so every library was
# rebuilt: the whole GPU suite; then the dense call's host fast path (a layout signature, the
# raw stream) in diag_fmla.py and the page-64 grid against FlashMLA in one process.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-30} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 240 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_fp8_kv.py" \
  "timeout 120 python benchmarks/results/logs/sm90_s70_2026-11-29/diag_fmla.py" \
  "timeout 300 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s70-h200-fmla --budget-s 270"
