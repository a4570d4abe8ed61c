M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__cycles_elapsed.avg.per_second,lts__t_sectors_srcunit_tex_op_read.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct
for p in 1 64; do for b in sm90 fi_fa3; do
  echo "### $b page $p"
  ncu --metrics $M -k regex:"mla_sm90|BatchMLAPage" --launch-skip 1 --launch-count 1 python benchmarks/check_sm90_dev.py --backend $b --profile 128 64 4096 --page $p 2>&1 | grep -v "^==PROF==" | tail -14
done; done
