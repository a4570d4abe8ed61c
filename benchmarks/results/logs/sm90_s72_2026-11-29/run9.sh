#!/usr/bin/env bash
# Session 72, device call 9 (one H200), every library rebuilt (common/device_plan.cuh: the
# uniform plan's merges skip a request's empty splits; the routed call plans one request with
# it): the whole GPU suite, racecheck and memcheck on the plans and routed / dense / sparse
# paths, the routed call on the grid against the wrapper, the dense call and fa3.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-8} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_sparse.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 150 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 120 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 150 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_flashmla_dense.py --ignore=tests/test_sparse.py --ignore=tests/test_fp8_kv.py --ignore=tests/test_cutlass_mla_api.py" \
  "timeout 60 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 90 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py tests/test_flashmla_dense.py tests/test_sparse.py -q -p no:cacheprovider -k 'sm90 and (repeat or one_request or graph or too_small or mtp) and not fwd'" \
  "timeout 70 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 3 --tag s72-h200-routed --budget-s 60"
