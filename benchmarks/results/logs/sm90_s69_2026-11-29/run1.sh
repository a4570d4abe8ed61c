#!/usr/bin/env bash
# Session 69, device call 1 (one H200): the shipped tree (no kernel change since session 67):
# the whole GPU suite, then the README's tutorials as a new user runs them.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 240 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_fp8_kv.py" \
  "python -m mla_wrapper info" \
  "timeout 60 python tutorials/decode_loop.py" \
  "timeout 60 python tutorials/cuda_graph_serving.py" \
  "timeout 90 python tutorials/deepseek_mini.py" \
  "timeout 60 python tutorials/sparse_fp8_decode.py"
