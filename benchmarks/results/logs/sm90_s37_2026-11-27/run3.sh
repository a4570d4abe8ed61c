#!/usr/bin/env bash
# Session 37, device call 3: the combine's units dealt to the CTAs in turn (unit u: CTA u % grid,
# warp u / grid; run 2's CTA-major form put B=4's merging CTAs on 16 SMs). A/B against session
# 36's kernel (lib:old_s36), against the CTA-major form (-DMLAW_COMBINE_SPREAD=0) and CtaStart's
# cp.async words against registers (-DMLAW_SM90_START_SMEM=0) on the compute rows. Middle and
# latency rows against fa3. "speedup" < 1: this tree is faster.
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
P="--variant=-DMLAW_COMBINE_SPREAD=0 --ab-only"
S="--variant=-DMLAW_SM90_START_SMEM=0 --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s36/{dt}.so --ab-cases paced" \
  "python $B/check_sm90_dev.py $P --ab-cases paced" \
  "python $B/check_sm90_dev.py $P --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases h128" \
  "python $B/check_sm90_dev.py $S --ab-cases h128" \
  "python $B/check_sm90_dev.py $O --ab-cases short" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s37-h100-middle"
