# ncu warp states and source counters of the sm90 kernel at B=1 (H, L from $1 $2; default 16 1024),
# the third of three launches (warm L2). Run under benchmarks/device_run.sh.
H=${1:-16}; L=${2:-1024}
ncu --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats \
    -k regex:mla_sm90 --launch-skip 2 --launch-count 1 -o $OUT/prof_b1_$H \
    python benchmarks/check_sm90_dev.py --backend sm90 --profile $H 1 $L > /dev/null
ncu --import $OUT/prof_b1_$H.ncu-rep --page details > $OUT/details_b1_$H.txt
ncu --import $OUT/prof_b1_$H.ncu-rep --page source --csv --print-source sass > $OUT/src_b1_$H.csv
gzip -f $OUT/src_b1_$H.csv; rm -f $OUT/prof_b1_$H.ncu-rep
grep -i -E "stall|warp cycles|no instruction|duration|elapsed" $OUT/details_b1_$H.txt | head -40
