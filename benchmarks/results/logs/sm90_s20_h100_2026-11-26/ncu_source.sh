# ncu source counters (per SASS instruction) of the sm90 kernel, H=128 B=64 L=4096 page 64.
# Run under benchmarks/device_run.sh (it sets PYTHONPATH and the JIT cache).
ncu --section SourceCounters --section WarpStateStats --section InstructionStats -k regex:mla_sm90 \
    --launch-skip 1 --launch-count 1 -o $OUT/prof \
    python benchmarks/check_sm90_dev.py --backend sm90 --profile 128 64 4096 ${PAGE:+--page $PAGE}
ncu --import $OUT/prof.ncu-rep --page source --csv --print-source sass > $OUT/src.csv
ncu --import $OUT/prof.ncu-rep --page details > $OUT/details.txt
gzip -f $OUT/src.csv; rm -f $OUT/prof.ncu-rep; ls -la $OUT
