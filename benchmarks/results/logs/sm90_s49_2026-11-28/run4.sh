#!/usr/bin/env bash
# Session 49, device call 4 (one H200): which shared-memory accesses of the shipped sm90 kernels
# still conflict (run 1 found the e4m3 widening's; session 48 the fp8_ds_mla one's). ncu's LSU
# shared-memory instructions, wavefronts and bank conflicts (loads, stores) of one launch of the
# 16-bit and the e4m3 kernel at H=128 / H=16 B=64 L=4096, page 64 (TMA) and page 1 (cp.async).
B=benchmarks
M=gpu__time_duration.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
NCU="ncu --metrics $M --csv -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "for f in '' '--fp8'; do for p in 64 1; do for c in '128 64 4096' '16 64 4096'; do echo \"case \$c page \$p \$f\"; $NCU python $B/check_sm90_dev.py --backend sm90 \$f --page \$p --profile \$c 2>&1 | grep -E '^\"[0-9]' | awk -F'\",\"' '{print \$(NF-2)\" | \"\$NF}'; done; done; done"
