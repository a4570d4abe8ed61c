# DRAM / L2 traffic of the sm90 kernel (ncu memory sections), H=128 and H=16 at B=64 L=4096,
# page 64, the default build and the given variant flags ($1). Run under benchmarks/device_run.sh.
for v in "" "$1"; do
  for hb in "128 64 4096" "16 64 4096"; do
    echo "=== variant '${v}' H B L = $hb"
    ncu --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
        -k regex:mla_sm90 --launch-skip 1 --launch-count 1 \
        python benchmarks/check_sm90_dev.py --backend sm90 --profile $hb ${v:+--variant=$v} 2>&1 \
      | grep -E "dram__|lts__|gpu__time|sm__cycles|Throughput|Hit Rate|Duration|Busy|Bandwidth|Max " | head -30
  done
done
