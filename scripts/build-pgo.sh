#!/usr/bin/env bash
# Make a profile for profile-guided optimisation (PGO) and install rdmalab
# built with it. `pip install .` already builds with the profile shipped in
# pgo/ (pgo/rdmalab_build.py); this script makes a new one:
#
#   scripts/build-pgo.sh            # train, install with the new profile
#   scripts/build-pgo.sh --ship     # the same, and make it the shipped one
#
# Remake the shipped profile (--ship) with every change to the Rust sources,
# a crate's Cargo.toml or Cargo.lock: LLVM drops the counts of each function whose
# control flow changed, which then runs at the plain build's speed, and
# tests/test_pgo_backend.py fails until the profile is current. For a sweep
# of hundreds of runs the profile-guided build takes 8-21 % less time
# (docs/speed.md), with the same outputs byte for byte.
#
# 1. builds the Python extension instrumented to count its branches and
#    calls, into a scratch directory (your installed rdmalab is untouched);
# 2. runs it on the training set below, which writes the counts;
# 3. merges the counts with llvm-profdata (with --ship: compresses them to
#    pgo/rdmalab.profdata.xz and writes pgo/profile.json);
# 4. installs rdmalab built with them (`pip install .`).
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
# (not with --ship: the shipped profile is trained on what ships).
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
ship=
case "${1:-}" in
    --ship) ship=1 ;;
    "") ;;
    *) echo "build-pgo: unknown argument '$1'; allowed: --ship, or none" >&2; exit 2 ;;
esac
if [ -n "$ship" ] && [ -n "${PGO_TRAIN:-}" ]; then
    echo "build-pgo: --ship trains on what ships; PGO_TRAIN='$PGO_TRAIN' would go into everyone's build" >&2
    exit 2
fi
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
# The build's own scripts and macros were instrumented too, and wrote
# counts as they ran: only the training's counts go in the profile.
rm -f "$dir"/raw/*.profraw

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
if [ -n "$ship" ]; then
    "$python" -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.compress(open(sys.argv[1], "rb").read(), preset=9))' \
        "$dir/rdmalab.profdata" pgo/rdmalab.profdata.xz
    "$python" pgo/rdmalab_build.py stamp "$major" "$(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "build-pgo: wrote pgo/rdmalab.profdata.xz and pgo/profile.json (commit them with the change they profile)"
    # The backend finds the new shipped profile by itself.
    RDMALAB_PGO=require "$python" -m pip install --quiet .
    echo "build-pgo: installed rdmalab built with the new shipped profile"
else
    RUSTFLAGS="-Cprofile-use=$dir/rdmalab.profdata" CARGO_TARGET_DIR="$dir/target-use" \
        "$python" -m pip install --quiet .
    echo "build-pgo: installed rdmalab built with $dir/rdmalab.profdata"
fi
