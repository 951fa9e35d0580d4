#!/usr/bin/env bash
# Compare the simulation core of two revisions on the same scenarios, the
# way the speed figures in docs/speed.md were measured: build the core's
# `run_json` example at each revision, then run the two binaries in
# alternation (A, B, A, B, ...) so that both see the same drift of a shared
# machine, and print every pair and the medians. Simulation only: no Python,
# no outputs written. Both runs must report the same switch packet-hops and
# finished flows, or the revisions do not simulate the same thing and the
# comparison is refused. (The event count may differ: an engine that skips
# events which would do nothing, such as an idle port's TxDone, runs fewer.)
#
#   scripts/ab-core.sh REV_A REV_B [-n PAIRS | --instructions] [--threads-a N] [--threads-b N] SCENARIO.yaml...
#   scripts/ab-core.sh 3b84254 HEAD -n 5 benchmarks/b-hpcc-320-hosts-websearch-dcqcn.yaml
#
# --threads-a N, --threads-b N: run that side on N threads (RDMALAB_THREADS,
# default 1). With the same revision on both sides this measures the
# parallel speed-up the way docs/parallel.md reports it (A / B), and the
# revision is built once:
#   scripts/ab-core.sh HEAD HEAD --threads-b 2 -n 4 benchmarks/g-fat-tree-k16-websearch-dcqcn.yaml
#
# --instructions: run each binary once under valgrind's cachegrind and
# print the instructions it executed (set-up included) instead of times.
# The count is exact and repeatable, where wall time on a shared machine
# swings by 10-20 %; the event loop runs at about 3.5 instructions per
# cycle on the machine it was measured on, so instructions track its time.
# Use a scenario cut short (a few seconds of work): cachegrind is ~50x slower.
#
# Needs cargo and an installed rdmalab (to turn the YAML into the core's
# JSON); --instructions also needs valgrind.
set -euo pipefail
usage() { echo "usage: $0 REV_A REV_B [-n PAIRS | --instructions] [--threads-a N] [--threads-b N] SCENARIO.yaml..." >&2; exit 2; }
[ $# -ge 3 ] || usage
rev_a=$1 rev_b=$2; shift 2
pairs=5 count= threads_a=1 threads_b=1
while [ $# -gt 0 ]; do
    case "$1" in
        -n) pairs=${2:?-n needs a number}; shift 2 ;;
        --instructions)
            count=1; shift
            command -v valgrind > /dev/null || { echo "--instructions needs valgrind" >&2; exit 2; } ;;
        --threads-a) threads_a=${2:?--threads-a needs a number}; shift 2 ;;
        --threads-b) threads_b=${2:?--threads-b needs a number}; shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
for t in "$pairs" "$threads_a" "$threads_b"; do
    case "$t" in ''|*[!0-9]*|0) echo "$0: -n and --threads-* take a whole number of at least 1, not '$t'" >&2; exit 2 ;; esac
done
[ $# -ge 1 ] || usage
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ab-core.XXXXXX")
trap 'rm -rf "$work"; git -C "$here" worktree prune' EXIT

build() { # rev -> path of its run_json
    local rev=$1 dir="$work/src-$2"
    git -C "$here" worktree add --quiet --detach "$dir" "$rev"
    if [ ! -f "$dir/crates/rdmalab-core/examples/run_json.rs" ]; then
        echo "$rev has no crates/rdmalab-core/examples/run_json.rs" >&2; exit 1
    fi
    (cd "$dir" && CARGO_TARGET_DIR="$work/target-$2" cargo build --quiet --release \
        -p rdmalab-core --example run_json)
    cp "$work/target-$2/release/examples/run_json" "$work/run_json-$2"
    git -C "$here" worktree remove --force "$dir"
    echo "$work/run_json-$2"
}
bin_a=$(build "$rev_a" a)
if [ "$(git -C "$here" rev-parse "$rev_a^{commit}")" = "$(git -C "$here" rev-parse "$rev_b^{commit}")" ]; then
    bin_b=$bin_a   # one revision: build it once
else
    bin_b=$(build "$rev_b" b)
fi

# "StopTime in 2.82s: 37344754 events (...), 21244280 switch hops (...),
# 1882 of 2105 flows": the seconds, and what was simulated (hops, flows).
what='s/.* in \([0-9.]*\)s: [0-9]* events .*, \([0-9]*\) switch hops .*, \([0-9]*\) of [0-9]* flows.*/\1 \2:\3/p'
# run BIN JSON THREADS
run() { RDMALAB_THREADS=$3 "$1" "$2" | sed -n "$what"; }

to_json() { python3 -c 'import sys; from rdmalab.scenario import load_scenario; print(load_scenario(sys.argv[1]).to_json())' "$1"; }

# Instructions executed by binary $1 on scenario $2 on $3 threads (and its
# event count).
instructions() {
    local out="$work/cg.txt"
    RDMALAB_THREADS=$3 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        "$1" "$2" > "$out.stdout" 2> "$out"
    local events sim
    events=$(sed -n 's/.* in [0-9.]*s: \([0-9]*\) events.*/\1/p' "$out.stdout")
    sim=$(sed -n "$what" "$out.stdout" | cut -d' ' -f2)
    [ -n "$events" ] && [ -n "$sim" ] || { cat "$out" "$out.stdout" >&2; return 1; }
    echo "$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$out" | tr -d ,) $events $sim"
}

if [ -n "$count" ]; then
    printf '%-40s %16s %16s %8s %10s\n' scenario "A instructions" "B instructions" "B / A" "B per event"
    for sc in "$@"; do
        json="$work/$(basename "$sc" .yaml).json"
        to_json "$sc" > "$json"
        read -r ia ea wa < <(instructions "$bin_a" "$json" "$threads_a") || { echo "$rev_a failed on $sc" >&2; exit 1; }
        read -r ib eb wb < <(instructions "$bin_b" "$json" "$threads_b") || { echo "$rev_b failed on $sc" >&2; exit 1; }
        if [ "$wa" != "$wb" ]; then
            echo "$sc: $rev_a simulated $wa (switch hops:flows), $rev_b $wb: not the same simulation" >&2; exit 1
        fi
        printf '%-40s %16s %16s %8.4f %10.1f\n' "$(basename "$sc" .yaml)" "$ia" "$ib" \
            "$(awk -v a="$ia" -v b="$ib" 'BEGIN {print b / a}')" "$(awk -v b="$ib" -v e="$eb" 'BEGIN {print b / e}')"
    done
    exit 0
fi

printf '%-40s %5s %10s %10s %8s\n' scenario pair "A s" "B s" "B / A"
for sc in "$@"; do
    json="$work/$(basename "$sc" .yaml).json"
    to_json "$sc" > "$json"
    ta=() tb=()
    for i in $(seq "$pairs"); do
        read -r sa wa < <(run "$bin_a" "$json" "$threads_a") || { echo "$rev_a failed on $sc" >&2; exit 1; }
        read -r sb wb < <(run "$bin_b" "$json" "$threads_b") || { echo "$rev_b failed on $sc" >&2; exit 1; }
        if [ -z "$sa" ] || [ -z "$sb" ] || [ "$wa" != "$wb" ]; then
            echo "$sc: $rev_a simulated '$wa' (switch hops:flows), $rev_b '$wb': not the same simulation" >&2; exit 1
        fi
        ta+=("$sa"); tb+=("$sb")
        printf '%-40s %5d %10s %10s %8.3f\n' "$(basename "$sc" .yaml)" "$i" "$sa" "$sb" "$(awk -v a="$sa" -v b="$sb" 'BEGIN {print b / a}')"
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
    ma=$(med "${ta[@]}") mb=$(med "${tb[@]}")
    printf '%-40s %5s %10s %10s %8.3f\n' "$(basename "$sc" .yaml)" median "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print b / a}')"
done
