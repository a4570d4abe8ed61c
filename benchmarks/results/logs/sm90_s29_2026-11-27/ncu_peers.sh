# ncu counts of sm90 against fi_fa3 and flashmla at one case (run from the repository root on
# the device: bash <this file> H B L). ncu holds the SM clock at base: cycles here are the
# schedule's, free of the power cap.
H=$1; B=$2; L=$3
M=dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
for be in sm90 fi_fa3 flashmla; do
  ncu --metrics $M --csv -k 'regex:[Mm][Ll][Aa]' --launch-skip 1 --launch-count 1 python benchmarks/check_sm90_dev.py --backend $be --profile $H $B $L 2>&1 | grep -E '^"[0-9]' | awk -F"\",\"" '{print substr($5,1,50)" | "$(NF-2)" | "$(NF-1)" | "$NF}' | sed "s/\"//g"
done
