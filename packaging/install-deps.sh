#!/usr/bin/env bash
# Installs what Switchyard needs to build on Debian/Ubuntu, non-interactively, and only what
# is missing. The CUDA toolkit (nvcc, NVRTC, NCCL) is expected to be installed already; the
# build works without it (CPU only).
set -euo pipefail

packages=(cmake g++ make pkg-config libboost-dev libboost-program-options-dev libspdlog-dev
          libfmt-dev doctest-dev libdlpack-dev binutils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "switchyard: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
