#!/usr/bin/env bash
# Session 41, device call 1 (2 GPUs): session 40's last commit moved five GPU tests' warm-up and
# CUDA-graph capture into one helper (capture_graph in tests/test_wrapper.py) without a GPU
# run. Here: the 14 NaN-poisoned checks, the whole GPU suite (on 2 GPUs the four 2-GPU tests run
# too) and cp_worker.py on two ranks (its graph_case uses the helper).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 90 python -m torch.distributed.run --standalone --nproc-per-node 2 tests/cp_worker.py 2>&1 | grep -i 'graph\|failures\|error' | head -20"
