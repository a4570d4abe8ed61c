#!/usr/bin/env bash
# Session 47, device call 5 (one GPU): where the sparse prefill's time goes at H=128 (FlashMLA's
# sparse prefill ran 1.06x faster there in run 4; ours 1.08x at H=64). The sparse benchmark's
# 16-bit rows A/B against the gather rows read with L2 evict-normal (reuse1) or evict-last
# (reuse2) where the request's rows span two tiles (MLAW_SM90_GATHER_REUSE_POLICY), per-tile traces
# of the sparse kernel (trace16), and the dense kernel's trace at H=128 B=128 L=4096 for reference.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-400} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --variant='lib:$V/reuse1/{dt}.so;lib:$V/reuse2/{dt}.so' --trace='lib:$V/trace16/{dt}.so'" \
  "timeout 200 python $B/check_sm90_dev.py --trace 128 128 4096 --variant='lib:$V/dtrace/{dt}.so'"
