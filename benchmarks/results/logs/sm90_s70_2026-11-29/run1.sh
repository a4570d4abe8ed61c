#!/usr/bin/env bash
# Session 70, device call 1 (one H200): FlashMLA's dense decode call (flash_mla_with_kvcache
# without indices) on the balanced plan written on the GPU: its GPU tests, the routed
# cutlass_mla_decode tests (its launch now gives sm90 the TMA bounds), the sparse FlashMLA
# tests, racecheck / memcheck, then the page-64 grid against FlashMLA in one process.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 300 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests/test_sparse.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider -k 'flash_mla or cutlass'" \
  "timeout 240 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants'" \
  "timeout 240 compute-sanitizer --tool memcheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'mtp_causal and sm90 or reused and sm90'" \
  "timeout 400 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s70-h200-fmla --budget-s 360"
