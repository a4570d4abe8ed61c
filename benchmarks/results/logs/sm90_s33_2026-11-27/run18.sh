#!/usr/bin/env bash
# Session 33, device call 18 (two GPUs): the multi-GPU and context-parallel tests (kernels on
# the tensors' device, decode across ranks under torchrun) on the shipped build with
# programmatic dependent launch, and the new back-to-back test.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "nvidia-smi -L" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_multi_gpu.py tests/test_distributed.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k 'reads_what_the_previous_run_wrote or cuda_graph'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
