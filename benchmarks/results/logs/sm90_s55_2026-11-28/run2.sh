#!/usr/bin/env bash
# Session 55, device call 2 (one H200): what bounds the narrow tile now (e62439b, the vote): a
# trace of H=16 B=64 L=4096 fp8 (`trace`: this build with MLAW_SM90_TRACE=1), ncu's pipe
# utilisation and the instruction mix by opcode of that launch (clock held at base by ncu).
B=benchmarks
V=.cache/variant
P="python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 16 64 4096"
NCU="ncu -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 16 64 4096 --variant=lib:$V/trace/{dt}.so" \
  "timeout 120 $NCU --csv --page raw --metrics regex:sm__inst_executed_pipe_.*avg.pct_of_peak_sustained_active,regex:sm__pipe_.*cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed.avg.per_cycle_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpc__cycles_elapsed.max,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum $P | python3 -c \"import csv,sys; r=list(csv.reader(sys.stdin)); h=r[0]; [print(a, b) for row in r[2:] for a,b in zip(h,row) if a.startswith(('sm','gpc','l1','smsp'))]\"" \
  "timeout 120 $NCU --metrics sass__inst_executed_per_opcode --print-metric-instances values --page raw --csv $P | tail -3" \
  "timeout 120 $NCU --csv --page raw --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio $P | python3 -c \"import csv,sys; r=list(csv.reader(sys.stdin)); h=r[0]; [print(a, b) for row in r[2:] for a,b in zip(h,row) if a.startswith('smsp')]\""
