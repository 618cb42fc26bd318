#!/usr/bin/env bash
# usage: out_of_tree_plugin.sh <switchyard build dir> <vendor plugin source> <scratch dir>
set -euo pipefail
build=$1 source=$2 scratch=$3
rm -rf "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$source" -B "$scratch/vendor" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/vendor" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
plugin=$scratch/vendor/libswitchyard-acme.so
test -f "$plugin"

# Only the entry point is exported.
exports=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[A-TV-Z]$/ {print $3}' | grep -v '^_' | sort -u)
if [ "$exports" != "sy_plugin_v1" ]; then
  echo "expected sy_plugin_v1 as the only export, got:"; echo "$exports"; exit 1
fi

# The helper that listing loads each plugin in is installed next to the plugins folder.
helper=$(find "$prefix" -path '*/switchyard/switchyard-probe' -type f -perm -u+x)
if [ -z "$helper" ]; then
  echo "switchyard-probe was not installed under $prefix (expected <libdir>/switchyard/)"; exit 1
fi

# The installed CLI finds its own plugins and the vendor's through SWITCHYARD_PLUGIN_PATH, and
# loads each of them in the installed helper (its debug log names the process).
export SWITCHYARD_PLUGIN_PATH=$scratch/vendor
SWITCHYARD_LOG_LEVEL=debug "$prefix/bin/switchyard" list 2>"$scratch/list.log" |
  tee "$scratch/list.txt"
grep -q "acme" "$scratch/list.txt"
grep -q "native" "$scratch/list.txt"
if ! grep -q "libswitchyard-acme.so in $helper (pid " "$scratch/list.log"; then
  echo "switchyard list did not load the plugins in $helper; its log:"; cat "$scratch/list.log"
  exit 1
fi
"$prefix/bin/switchyard" check acme --family norm | tee "$scratch/check.txt"
grep -Eq "^[0-9]+ passed, 0 failed" "$scratch/check.txt"
echo "packaging: out-of-tree plugin built, listed and checked"
