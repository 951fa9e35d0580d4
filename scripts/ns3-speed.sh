#!/usr/bin/env bash
# Time rdmalab beside a build of the ns-3 HPCC simulator on the same input
# files, one run at a time (a speed ratio, unlike scripts/ns3-agreement.sh,
# which runs jobs side by side to compare results):
#
#   scripts/ns3-speed.sh NS3_THIRD [OUT_DIR]
#
# Per CC and round: rdmalab, ns-3, rdmalab, each timed by /usr/bin/time
# (process CPU time, user + sys, and peak memory), then ns-3's CPU time over
# the mean of rdmalab's two runs. Alternating, so that a machine whose speed
# drifts within the hour shows up as two rdmalab runs that disagree.
# With RDMALAB_B set, a second build runs inside the first: A, B, ns-3, B, A.
#
# NS3_THIRD is the simulator's `scratch/third` program (or a wrapper that
# sets its library path), run as its ./waf does: `cd RUN_DIR && NS3_THIRD
# mix/config-<cc>.txt`. Environment: SEED (11), WINDOW (arrival window in
# s, 0.005), LOAD (0.3), CDF (websearch), CCS ("dcqcn hpcc"), ROUNDS (1),
# RDMALAB (the command timed: "rdmalab"; e.g. "env PYTHONPATH=DIR rdmalab"
# for another install), RDMALAB_B (unset).
# Prints one line per run and a table of ratios; writes both to OUT_DIR/speed.txt.
set -euo pipefail
ns3=${1:?usage: scripts/ns3-speed.sh NS3_THIRD [OUT_DIR]}
ns3=$(realpath "$ns3")
out=$(realpath -m "${2:-runs/ns3-speed}")
here=$(cd "$(dirname "$0")/.." && pwd)
SEED=${SEED:-11}; WINDOW=${WINDOW:-0.005}; LOAD=${LOAD:-0.3}; CDF=${CDF:-websearch}
CCS=${CCS:-dcqcn hpcc}; ROUNDS=${ROUNDS:-1}; RDMALAB=${RDMALAB:-rdmalab}; RDMALAB_B=${RDMALAB_B:-}
for cc in $CCS; do
    case "$cc" in dcqcn|hpcc) ;; *) echo "ns3-speed: CCS: '$cc' is not a CC with a config in examples/hpcc/mix; allowed: dcqcn, hpcc" >&2; exit 2 ;; esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "ns3-speed: ROUNDS: '$ROUNDS' is not a positive whole number" >&2; exit 2 ;; esac
if [ ! -x /usr/bin/time ]; then
    echo "ns3-speed: needs /usr/bin/time (GNU time; Debian package 'time') for CPU time and peak memory" >&2
    exit 2
fi

mkdir -p "$out"
flows="$out/flow-s$SEED.txt"
rdmalab hpcc traffic -c "$CDF" -n 320 -l "$LOAD" -b 100G -t "$WINDOW" -o "$flows" --seed "$SEED" >&2
for tool in ns3 rdmalab; do
    d="$out/$tool"
    mkdir -p "$d/mix"
    cp "$here/examples/hpcc/mix/"{topology.txt,trace.txt,config-dcqcn.txt,config-hpcc.txt} "$d/mix/"
    cp "$flows" "$d/mix/flow.txt"
done

# One timed run: writes "CPU_S PEAK_MB" to $out/last.txt; a failed run
# stops the script.
timed() {
    local dir=$1; shift
    (cd "$dir" && /usr/bin/time -f "%U %S %M" -o "$out/time.txt" "$@" > "$out/run.log" 2>&1) || {
        echo "ns3-speed: failed in $dir: $* (its output: $out/run.log)" >&2
        exit 1
    }
    awk '{printf "%.2f %d\n", $1 + $2, $3 / 1024}' "$out/time.txt" > "$out/last.txt"
}

# ns-3's CPU time N over the mean of two rdmalab runs X and Y.
ratio() { awk -v n="$1" -v x="$2" -v y="$3" 'BEGIN { printf "%.1f", n / ((x + y) / 2) }'; }

report="$out/speed.txt"
: > "$report"
log() { echo "$*" | tee -a "$report"; }
rows=()
for round in $(seq 1 "$ROUNDS"); do
    for cc in $CCS; do
        cfg="mix/config-$cc.txt"
        log "== $cc, round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
        timed "$out/rdmalab" $RDMALAB hpcc run "$cfg" --quiet; read -r a1 am < "$out/last.txt"; log "rdmalab: $a1 s, $am MB"
        if [ -n "$RDMALAB_B" ]; then
            timed "$out/rdmalab" $RDMALAB_B hpcc run "$cfg" --quiet; read -r b1 bm < "$out/last.txt"; log "rdmalab B: $b1 s, $bm MB"
        fi
        timed "$out/ns3" "$ns3" "$cfg"; read -r n nm < "$out/last.txt"; log "ns-3: $n s, $nm MB"
        if [ -n "$RDMALAB_B" ]; then
            timed "$out/rdmalab" $RDMALAB_B hpcc run "$cfg" --quiet; read -r b2 _ < "$out/last.txt"; log "rdmalab B: $b2 s"
        fi
        timed "$out/rdmalab" $RDMALAB hpcc run "$cfg" --quiet; read -r a2 _ < "$out/last.txt"; log "rdmalab: $a2 s"
        row="| $cc | $round | $n s | $a1, $a2 s | $(ratio "$n" "$a1" "$a2")x |"
        if [ -n "$RDMALAB_B" ]; then
            row="| $cc | $round | $n s | $a1, $a2 s | $(ratio "$n" "$a1" "$a2")x | $b1, $b2 s | $(ratio "$n" "$b1" "$b2")x |"
        fi
        rows+=("$row $nm MB vs $am MB |")
    done
done
log ""
if [ -n "$RDMALAB_B" ]; then
    log "| CC | round | ns-3 CPU | rdmalab CPU (2 runs) | ratio to the mean | rdmalab B CPU (2 runs) | ratio to the mean | peak memory ns-3 vs rdmalab |"
    log "|---|---|---|---|---|---|---|---|"
else
    log "| CC | round | ns-3 CPU | rdmalab CPU (2 runs) | ratio to the mean | peak memory ns-3 vs rdmalab |"
    log "|---|---|---|---|---|---|"
fi
for r in "${rows[@]}"; do log "$r"; done
