#!/usr/bin/env bash
# Session 73, device call 8 (one H200): the dense FlashMLA call's later calls pack only the new
# tensors' addresses (strides and offsets kept from the checked call). Its tests, then the host
# cost of the drop-in calls beside the wrapper's run().
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-20} bash benchmarks/device_run.sh \
  "timeout 70 python -m pytest tests/test_flashmla_dense.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 40 python benchmarks/bench_host.py --api"
