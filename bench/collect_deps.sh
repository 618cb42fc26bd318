#!/usr/bin/env bash
# Copies the shared libraries that switchyard-bench and libswitchyard need but the GPU machine
# does not have (GPU.md: Boost.Program_options, spdlog, fmt) into BUILD_DIR/deps, where
# bench/run_gpu.sh puts them on LD_LIBRARY_PATH. Run it on the build machine after building.
#
# usage: bench/collect_deps.sh BUILD_DIR
set -eu
build=${1:?usage: bench/collect_deps.sh BUILD_DIR}
mkdir -p "$build/deps"
ldd "$build/bin/switchyard-bench" "$build"/lib/libswitchyard.so* 2>/dev/null |
  awk '/=>/ { print $3 }' | sort -u |
  grep -E 'libboost_program_options|libspdlog|libfmt' |
  while read -r lib; do
    cp -L "$lib" "$build/deps/"
    echo "copied $lib"
  done
