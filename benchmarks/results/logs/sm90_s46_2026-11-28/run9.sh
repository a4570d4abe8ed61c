#!/usr/bin/env bash
# Session 46, device call 9 (one GPU): flash_mla_sparse_fwd's cached wrapper keyed by the family
# MLA_WRAPPER_SM90 routes to (run 8: the fp8-rows prefill test failed in the whole file because
# an earlier test had made the cached wrapper with sm80; the family parametrizations of the
# flash_mla_sparse_fwd tests now run each family): the sparse GPU tests.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
