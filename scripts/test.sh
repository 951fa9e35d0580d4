#!/usr/bin/env bash
# Every test of rdmalab: installs the package with its test extra (which
# includes Ray, so the Ray backend is tested), headless Chromium (for the
# HTML report), tshark (which dissects packets.pcap in tests/test_pcap.py),
# GNU time (tests/test_ns3_speed_script.py, test_htsim_speed_script.py) and a C compiler (for C
# controllers) if missing, checks that the declared minimum Rust version
# holds, runs the Rust core's tests, then the Python tests.
# CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v tshark >/dev/null 2>&1 || missing="$missing tshark"
# GNU time, which scripts/ns3-speed.sh and htsim-speed.sh (and their tests) read CPU time and peak memory from.
[ -x /usr/bin/time ] || missing="$missing time"
# A C compiler builds the C controllers the tests run (cargo needs one too).
command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    # wireshark-common asks whether non-root users may capture: no question, no.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq $missing >/dev/null
fi
python3 -m pip install --quiet --disable-pip-version-check ".[test]"
# The Rust version Cargo.toml promises (rust-version) must build the code:
# clippy flags any standard-library item newer than it.
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo clippy --quiet --workspace --all-targets -- -A clippy::all -D clippy::incompatible_msrv
cargo test --release -p rdmalab-core
# tests/test_pcap.py skips when tshark is missing, unless told it must run.
RDMALAB_REQUIRE_TSHARK=1 python3 -m pytest tests
