#!/usr/bin/env bash
# Session 47, device call 4 (one GPU): the tree's kernels are session 46's again (SASS compared).
# The sparse benchmark's full grid with FlashMLA's sparse prefill (sparse_prefill_fwd, what
# vLLM's and SGLang's V3.2 prefill calls) beside ours on the prefill rows, same tensors.
B=benchmarks
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 300 python $B/bench_sparse.py"
