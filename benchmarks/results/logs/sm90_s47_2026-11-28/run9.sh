#!/usr/bin/env bash
# Session 47, device call 9 (one GPU): whether the fp8 caches (e4m3, fp8_ds_mla) want the gather
# mode's L2 prefetch (the default keeps it on for them): the sparse benchmark with the e4m3 and
# fp8_ds_mla rows with MLA_WRAPPER_GATHER_L2_PREFETCH=0, then with the default, alternately
# (separate processes, same seeds).
B=benchmarks
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "MLA_WRAPPER_GATHER_L2_PREFETCH=0 timeout 300 python $B/bench_sparse.py --quick --fp8 --ds-mla" \
  "timeout 300 python $B/bench_sparse.py --quick --fp8 --ds-mla" \
  "MLA_WRAPPER_GATHER_L2_PREFETCH=0 timeout 300 python $B/bench_sparse.py --quick --fp8 --ds-mla" \
  "timeout 300 python $B/bench_sparse.py --quick --fp8 --ds-mla"
