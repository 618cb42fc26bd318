#!/usr/bin/env bash
# Builds Switchyard and runs the main job: `switchyard train` on the CPU through the selected
# backends. Installs missing system packages first. Extra arguments go to `switchyard train`
# (e.g. --tp 4, --steps 500, --json, --cross-entropy native).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SWITCHYARD_BUILD_DIR:-$root/build}
"$root/packaging/build.sh"
exec "$build/bin/switchyard" train "$@"
