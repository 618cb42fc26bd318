#!/usr/bin/env bash
# Configures and builds Switchyard into ./build (or $SWITCHYARD_BUILD_DIR). Extra arguments go
# to CMake's configure step. Used by the README's two commands.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SWITCHYARD_BUILD_DIR:-$root/build}
"$root/packaging/install-deps.sh"
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
jobs=${SWITCHYARD_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs"
