#!/usr/bin/env bash
# Session 73, device call 3 (one H200), the session's final libraries (every library rebuilt:
# the sm90 kernel's enable_pdl 2 wait, the plan kernels' programmatic launch): the full grid
# with every peer in one process (the README's table), then the wrapper's and the sparse GPU
# tests.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s73-h200-full" \
  "timeout 170 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 120 python -m pytest tests/test_sparse.py -m gpu -q -rfs -p no:cacheprovider"
