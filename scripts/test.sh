#!/usr/bin/env bash
# Every test of rdmalab: installs the package with its test extra (which
# includes Ray, so the Ray backend is tested) and headless Chromium (for the
# HTML report) if missing, runs the Rust core's tests, then the Python tests.
# CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
fi
python3 -m pip install --quiet --disable-pip-version-check ".[test]"
cargo test --release -p rdmalab-core
python3 -m pytest tests
