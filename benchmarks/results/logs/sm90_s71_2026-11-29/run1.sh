#!/usr/bin/env bash
# Session 71, device call 1 (one H200): common/plan.h gained mlaw_tile_visible_len (shared by
# the CPU planner and the GPU's balanced plan), so every library was rebuilt; the balanced plan
# cuts request-aligned pieces where no more requests than groups; the sparse wrapper takes the
# kernels' +inf lse (lse_base_e = 2). The changed paths' tests, the dense call against the
# wrapper and FlashMLA (grid and sweep), then the whole GPU suite.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_sparse.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 90 python benchmarks/bench_decode.py --backends sm90,sm90_fmla,flashmla --cases compute,memory,middle,latency,tp4,tp2,mtp,ragged,ragged_mtp --tag s71-h200-fmla-aligned --budget-s 80" \
  "timeout 90 python benchmarks/bench_decode.py --backends sm90,sm90_fmla --cases sweep --tag s71-h200-fmla-sweep --budget-s 80" \
  "timeout 120 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_flashmla_dense.py --ignore=tests/test_sparse.py --ignore=tests/test_fp8_kv.py"
