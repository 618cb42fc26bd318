#!/usr/bin/env bash
# Builds everything (warnings are errors) and runs every CPU test suite with CTest.
# Installs missing system packages first. Build folder: ./build (or $SWITCHYARD_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SWITCHYARD_BUILD_DIR:-$root/build}
"$root/packaging/build.sh" -DSWITCHYARD_WERROR=ON -DSWITCHYARD_BUILD_TESTS=ON "$@"
ctest --test-dir "$build" --output-on-failure -j "${SWITCHYARD_JOBS:-$(nproc)}"
