#!/usr/bin/env bash
# Issue 8 (sparse MLA) on the device machine, one call; logs and JSON lines under $OUT.
#   bash benchmarks/device_issue8.sh            # all steps (about 5-8 minutes on an H200)
#   bash benchmarks/device_issue8.sh tests      # only the GPU tests
# Steps: the sparse GPU tests; the dense sm80 / wrapper GPU tests (the sm80 kernel gained the
# gather-mode template hook, so its dense instantiation must still pass); the quick sparse
# benchmark (decode + prefill next to the dense kernel at the same FLOPs); compute-sanitizer
# memcheck on two small sparse cases.
set -uo pipefail
cd "$(dirname "$0")/.."
steps=("python -m pytest tests/test_sparse.py -q -rs -m gpu -p no:cacheprovider"
       "python -m pytest tests/test_sm80_kernel.py tests/test_wrapper.py -q -rs -m gpu -x -p no:cacheprovider")
if [ "${1:-all}" != "tests" ]; then
  steps+=("python benchmarks/bench_sparse.py --quick"
          "compute-sanitizer --tool memcheck --error-exitcode 1 python -m pytest tests/test_sparse.py -q -m gpu -p no:cacheprovider -k 'test_wrapper_topk_length or test_flash_mla_sparse_fwd_topk_length'")
fi
TAIL=25 bash benchmarks/device_run.sh "${steps[@]}"
