#!/usr/bin/env bash
# Session 35, device call 4: wgmma_chains (built on the CPU machine into .cache/wgmma_chains from
# wgmma_chains/wgmma_chains.cu): clocks per m64nNk16 for N = 16 / 32 / 64 with the 36 k-steps on
# 1, 2 or 4 accumulators, from one or two warpgroups per SM.
TAIL=${TAIL:-30} bash benchmarks/device_run.sh ".cache/wgmma_chains"
