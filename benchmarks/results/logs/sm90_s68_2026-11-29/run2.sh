#!/usr/bin/env bash
# Session 68, device call 2 (one H200): does test_large_cache catch the defect it is for? The
# sm80 kernel built with its latent rows' page offset truncated to 32 bits (ckv_row =
# ckv + (int)(pg * ckv_stride_page) + ...: FlashInfer PR 3136's bug), carried prebuilt in
# .cache/jit_mut.txz; the tree carries the same mutated header (the cache key hashes it).
# Expected: every sm80 case of test_paged_cache_past_4gib fails.
tar -C .cache -xJf .cache/jit_mut.txz
TAIL=${TAIL:-40} bash benchmarks/device_run.sh \
  "MLA_WRAPPER_CACHE_DIR=\$PWD/.cache/jit_mut timeout 200 python -m pytest tests/test_large_cache.py -m gpu -q -rs -k 'paged_cache and sm80' 2>&1 | grep -v '^  ' | tail -30"
