#!/bin/bash
# sustained probe runs (mode, compute) with nvidia-smi sampling power and SM clock
cd $(dirname $0)
for compute in 2400 0; do
for mode in 1 2 0; do
  nvidia-smi --query-gpu=power.draw,clocks.sm --format=csv,noheader,nounits -lms 50 > /tmp/smi.txt &
  pid=$!
  ./mc_probe $mode $compute 4 | tail -1
  kill $pid; sleep 0.2
  python3 - <<'PY'
rows=[l.split(',') for l in open('/tmp/smi.txt') if ',' in l]
rows=rows[len(rows)//4:]
pw=sorted(float(r[0]) for r in rows); ck=sorted(float(r[1]) for r in rows)
print(f"   power median {pw[len(pw)//2]:.0f} W, SM clock median {ck[len(ck)//2]:.0f} MHz ({len(rows)} samples)")
PY
done; done
