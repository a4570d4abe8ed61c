#!/usr/bin/env bash
# Session 73, device call 2 (one H200): the GPU plan kernels themselves launched with
# programmatic stream serialization (they wait for the stream's previous kernel before their
# first read), and the routed call's one-request uniform plan in pieces of at least
# min(ceil(L / 16), two kv tiles) on sm90. The routed / dense / torch-op tests, racecheck and
# memcheck on the plans, the plan kernels' time, the grid with programmatic launch on and off.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py tests/test_torch_ops.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 100 compute-sanitizer --tool racecheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (one_request or waits)'" \
  "timeout 90 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat or graph or one_request or waits) and not fwd'" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 2 --tag s73-h200-planpdl --budget-s 50" \
  "MLA_WRAPPER_PDL=0 timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 2 --tag s73-h200-planpdl-off --budget-s 50"
