#!/usr/bin/env bash
# Session 73, device call 1 (one H200): session 72's pdl_plan.patch applied (enable_pdl 2: the
# routed call's and the dense call's first attention launch overlaps the plan kernel and waits
# for it first) and the balanced plan's shared-memory length cache removed. The dense, cutlass,
# torch-op and large-cache tests; racecheck on the memo tests to completion; memcheck; the plan
# kernels' time; the routed and dense calls on the grid with programmatic launch on and off.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py tests/test_torch_ops.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 compute-sanitizer --tool racecheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat)'" \
  "timeout 60 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat or graph) and not fwd'" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 2 --tag s73-h200-pdl2 --budget-s 50" \
  "MLA_WRAPPER_PDL=0 timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 2 --tag s73-h200-nopdl --budget-s 50"
