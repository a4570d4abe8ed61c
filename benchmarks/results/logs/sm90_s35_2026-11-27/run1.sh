#!/usr/bin/env bash
# Session 35, device call 1: does the H=16 B=16 L=4096 row gain from more KV bytes in flight?
# The probe (wrong results) with a third 72 KB stage over the Q tile, A/B'd on the paced cases
# after do_bench's flush and after a read flush; the no-math probe as the load path's bound; the
# middle rows against fa3 in this process; then 128-byte L2 promotion of the KV maps at H=128
# (do_bench and at the 700 W cap). speedup > 1: the variant is faster.
B=benchmarks
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_STAGES3=1 --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_STAGES3=1 --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_NO_MATH=1 --ab-only --ab-cases paced" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle --tag s35-middle" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_L2_PROMOTION=CU_TENSOR_MAP_L2_PROMOTION_L2_128B --ab-only --ab-cases compute" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_L2_PROMOTION=CU_TENSOR_MAP_L2_PROMOTION_L2_128B --power 128 64 4096 --tag s35-promo128"
