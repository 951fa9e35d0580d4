#!/usr/bin/env bash
# Every test of rdmalab: installs the package with its test extra, runs the
# Rust core's tests, then the Python tests. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check ".[test]"
cargo test --release -p rdmalab-core
python3 -m pytest tests
