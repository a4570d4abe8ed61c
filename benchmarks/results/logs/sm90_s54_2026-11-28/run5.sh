#!/usr/bin/env bash
# Session 54, device call 5 (one H200): the landed build (6808208; the narrow instance's Q
# fragments born in register quads). The fp8 grid and the 16-head sweep in one process with our
# bf16 path and FlashInfer fa3; a trace of H=16 B=64 L=4096 (`qwarpT`, the same kernel with
# MLAW_SM90_TRACE=1) and an ncu profile of that launch (with the tensor and shared-memory pipes'
# activity), for the next step.
B=benchmarks
V=.cache/variant
NCU="ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active --csv --page details -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s54-h200-fp8" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s54-h200-sweep" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 16 64 4096 --variant=lib:$V/qwarpT/{dt}.so" \
  "timeout 120 $NCU python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 16 64 4096"
