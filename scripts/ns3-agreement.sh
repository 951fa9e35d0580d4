#!/usr/bin/env bash
# Measure how rdmalab agrees with, and how fast it is next to, a build of the
# ns-3 HPCC simulator, on the same input files: the 320-host fat tree of
# examples/hpcc with Poisson traffic from `rdmalab hpcc traffic`, DCQCN and HPCC.
#
#   scripts/ns3-agreement.sh NS3_THIRD [OUT_DIR]
#
# NS3_THIRD is the simulator's `scratch/third` program, run as its ./waf does:
# `cd RUN_DIR && NS3_THIRD mix/config-<cc>.txt`. Environment: SEEDS ("11 12 13"),
# WINDOW (arrival window in s, 0.005), LOAD (0.3), CDF (websearch), JOBS (2).
# Prints per-bucket slowdowns side by side with their ratios, and wall times.
set -euo pipefail
ns3=${1:?usage: scripts/ns3-agreement.sh NS3_THIRD [OUT_DIR]}
ns3=$(realpath "$ns3")
out=$(realpath -m "${2:-runs/ns3-agreement}")
here=$(cd "$(dirname "$0")/.." && pwd)
SEEDS=${SEEDS:-11 12 13}; WINDOW=${WINDOW:-0.005}; LOAD=${LOAD:-0.3}; CDF=${CDF:-websearch}; JOBS=${JOBS:-2}

jobs_file="$out/jobs.txt"
mkdir -p "$out"; : > "$jobs_file"
for seed in $SEEDS; do
  flows="$out/flow-s$seed.txt"
  rdmalab hpcc traffic -c "$CDF" -n 320 -l "$LOAD" -b 100G -t "$WINDOW" -o "$flows" --seed "$seed" >&2
  for tool in ns3 rdmalab; do
    for cc in dcqcn hpcc; do
      d="$out/$tool/s$seed"
      mkdir -p "$d/mix"
      cp "$here/examples/hpcc/mix/"{topology.txt,trace.txt,config-$cc.txt} "$d/mix/"
      cp "$flows" "$d/mix/flow.txt"
      echo "$tool $d $cc" >> "$jobs_file"
    done
  done
done

run_one() {
  local tool=$1 dir=$2 cc=$3
  cd "$dir"
  if [ "$tool" = ns3 ]; then cmd=("$NS3" "mix/config-$cc.txt"); else cmd=(rdmalab hpcc run "mix/config-$cc.txt" --quiet); fi
  /usr/bin/time -f "%e %M" -o "time-$cc.txt" "${cmd[@]}" > "log-$cc.txt" 2>&1
  echo "$tool $dir $cc $(cat "time-$cc.txt")"
}
export -f run_one
export NS3="$ns3"
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$jobs_file" > "$out/times.txt"

for cc in dcqcn hpcc; do
  a=$(for s in $SEEDS; do printf '%s+' "$out/ns3/s$s/mix/fct-$cc.txt"; done); a=${a%+}
  b=$(for s in $SEEDS; do printf '%s+' "$out/rdmalab/s$s/mix/fct-$cc.txt"; done); b=${b%+}
  echo "== $cc: ns-3 (first column) vs rdmalab, seeds $SEEDS pooled"
  rdmalab hpcc analyze "$a" "$b"
done | tee "$out/agreement.txt"
echo "== wall time (s) and peak memory (KB) per run, $JOBS at a time" | tee -a "$out/agreement.txt"
sort "$out/times.txt" | tee -a "$out/agreement.txt"
