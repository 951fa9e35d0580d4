#!/usr/bin/env bash
# Build and install rdmalab with profile-guided optimisation (PGO): for a
# sweep of hundreds of runs, 12-15 % fewer instructions per event and
# 4-27 % less time (4-8 % in the calmest measurement, 2026-11-27), with the
# same outputs byte for byte (docs/speed.md).
#
#   scripts/build-pgo.sh            # from the repository root, instead of `pip install .`
#
# 1. builds the Python extension instrumented to count its branches and
#    calls, into a scratch directory (your installed rdmalab is untouched);
# 2. runs it on the training set below, which writes the counts;
# 3. merges the counts with llvm-profdata;
# 4. installs rdmalab built with them (`pip install .` with
#    RUSTFLAGS=-Cprofile-use=...).
# Takes a few minutes on two cores. Outputs do not depend on the
# profile: it changes how the compiler lays out and inlines code, never
# what the code computes (no fast-math in Rust).
#
# The training set is the shipped benchmarks, both ns-3 inputs in
# examples/hpcc/, every single-run example, and the two ends of every
# shipped sweep cut to 300 us (scripts/pgo_train_sweeps.py): DCQCN, HPCC,
# TIMELY, Swift, PFC, loss, the control placements and resource models,
# the SCR, SRNIC, SwCC and SwiftRDMA systems and the attacks, about a
# minute of runs. Code a run never reaches in training is laid
# out as cold: an algorithm or feature missing from it runs at about the
# plain build's speed, not faster. Add your own scenarios with
#   PGO_TRAIN="my.yaml other.yaml" scripts/build-pgo.sh
#
# Needs llvm-profdata of the same LLVM major version as rustc's: either
# `rustup component add llvm-tools` or the system's llvm-<major> package.
# PYTHON (default python3) picks the interpreter; PGO_DIR (default
# target/pgo) the scratch directory.
set -euo pipefail
called_from=$PWD
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
python=${PYTHON:-python3}
dir=$(mkdir -p "${PGO_DIR:-target/pgo}" && cd "${PGO_DIR:-target/pgo}" && pwd)

# llvm-profdata whose major version is rustc's LLVM's: a profile written by
# one LLVM is not always readable by another.
major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
[ -n "$major" ] || { echo "build-pgo: cannot read rustc's LLVM version from 'rustc -vV'" >&2; exit 2; }
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=
for c in "$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata" \
         "llvm-profdata-$major" "/usr/lib/llvm-$major/bin/llvm-profdata" llvm-profdata; do
    if command -v "$c" > /dev/null 2>&1 &&
       [ "$("$c" --version 2>/dev/null | sed -n 's/.*LLVM version \([0-9]*\).*/\1/p' | head -1)" = "$major" ]; then
        profdata=$c
        break
    fi
done
if [ -z "$profdata" ]; then
    echo "build-pgo: no llvm-profdata for LLVM $major (rustc's) found; install one:" >&2
    echo "  rustup component add llvm-tools     # or: apt install llvm-$major" >&2
    exit 2
fi
echo "build-pgo: rustc's LLVM is $major; using $profdata"

echo "build-pgo: [1/4] instrumented build"
rm -rf "$dir/raw" "$dir/wheel" "$dir/site" "$dir/train"
mkdir -p "$dir/raw" "$dir/wheel" "$dir/train"
RUSTFLAGS="-Cprofile-generate=$dir/raw" CARGO_TARGET_DIR="$dir/target-generate" \
    "$python" -m pip wheel --quiet --no-deps --wheel-dir "$dir/wheel" .
"$python" -m pip install --quiet --no-deps --target "$dir/site" "$dir"/wheel/rdmalab-*.whl

echo "build-pgo: [2/4] training runs"
# Their warnings (the ns-3 configs' ignored keys) go to a file: they are
# about the training inputs, not the build. A failed run shows its end.
msgs="$dir/train/messages.txt"
exec 3>&2 2> "$msgs"
set -o errtrace   # the trap below also inside train()
trap 'echo "build-pgo: a training run failed; the end of $msgs:" >&3; tail -n 20 "$msgs" >&3' ERR
# The instrumented package goes first on the path; its dependencies are the
# installed ones (install rdmalab plainly once before, for them).
train() { PYTHONPATH="$dir/site${PYTHONPATH:+:$PYTHONPATH}" "$python" -m rdmalab "$@"; }
train --version > /dev/null || {
    echo "build-pgo: the instrumented build does not start; install rdmalab's dependencies first (pip install .). It said:" >&3
    tail -n 5 "$msgs" >&3
    exit 2
}
mkdir -p "$dir/train/hpcc"
cp -r examples/hpcc/mix "$dir/train/hpcc/"
train bench --repeat 1 > "$dir/train/bench.txt"
(cd "$dir/train/hpcc" && for cc in dcqcn hpcc; do train hpcc run "mix/config-$cc.txt" --quiet > /dev/null; done)
for f in examples/*.yaml examples/*/*.yaml; do
    grep -q '^base:' "$f" && continue   # a sweep: many runs (some long) of what the others run
    train run "$f" --out "$dir/train/$(basename "$f" .yaml)" --quiet > /dev/null
done
PYTHONPATH="$dir/site${PYTHONPATH:+:$PYTHONPATH}" "$python" scripts/pgo_train_sweeps.py "$dir/train/sweeps" \
    $(grep -l '^base:' examples/*.yaml examples/*/*.yaml)
for f in ${PGO_TRAIN:-}; do
    case "$f" in /*) ;; *) f="$called_from/$f" ;; esac   # relative to where the script was called
    train run "$f" --out "$dir/train/own-$(basename "$f" .yaml)" --quiet > /dev/null
done
exec 2>&3 3>&-
trap - ERR
ls "$dir"/raw/*.profraw > /dev/null 2>&1 || { echo "build-pgo: training wrote no profile" >&2; exit 1; }

echo "build-pgo: [3/4] merging the profile"
"$profdata" merge -o "$dir/rdmalab.profdata" "$dir"/raw/*.profraw

echo "build-pgo: [4/4] optimised build and install"
RUSTFLAGS="-Cprofile-use=$dir/rdmalab.profdata" CARGO_TARGET_DIR="$dir/target-use" \
    "$python" -m pip install --quiet .
echo "build-pgo: installed rdmalab built with $dir/rdmalab.profdata"
