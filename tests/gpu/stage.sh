#!/usr/bin/env bash
# Builds the folder that travels to the GPU machine: the build's programs, libraries and
# plugins, plus the shared libraries they need that the GPU machine lacks (found with ldd),
# and a wrapper that sets LD_LIBRARY_PATH. See tests/gpu/README.md.
#
#   bash tests/gpu/stage.sh [BUILD_DIR] [STAGE_DIR]     (defaults: build-cuda, build-stage)
#
# STAGE_DIR must be a path git ignores (the device tool carries only ignored paths):
# build-stage matches .gitignore's /build*/. What travels must stay under 60 MiB, together with
# the working tree under the tool's 64 MiB: only the programs the GPU run uses are copied
# (switchyard, switchyard-bench, switchyard-fused-startup, tp_nccl_check, native_cuda_check,
# comm_nccl_gpu_check, graph_capture_check, ce_paths_check, norm_paths_check, test_lm_head_cuda;
# each where built); name more with STAGE_BINARIES="a b", or take all of bin/ with
# STAGE_ALL_BINARIES=1.
#
# Layout (mirrors the install tree, so the core finds its plugin folder next to itself):
#   STAGE/bin/                     switchyard, switchyard-bench, switchyard-fused-startup,
#                                  tp_nccl_check, native_cuda_check, comm_nccl_gpu_check,
#                                  graph_capture_check, ...
#   STAGE/lib/                     libswitchyard*.so*, and the copied system libraries
#   STAGE/lib/switchyard/plugins/  libswitchyard-<name>.so
#   STAGE/lib/switchyard/switchyard-probe  the helper the core lists plugins in (without it,
#                                  listing forks, and CUDA plugins fail in a process that has
#                                  already initialised CUDA, e.g. switchyard-bench)
#   STAGE/env.sh                   `source` it: LD_LIBRARY_PATH=STAGE/lib:...
#   STAGE/with-env CMD...          runs CMD with that environment
#   STAGE/MANIFEST                 what was copied from where, and the size
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build-cuda}
stage=${2:-$repo/build-stage}
binaries="switchyard switchyard-bench switchyard-fused-startup tp_nccl_check native_cuda_check comm_nccl_gpu_check graph_capture_check ce_paths_check norm_paths_check test_lm_head_cuda ${STAGE_BINARIES:-}"
limit_mib=${STAGE_LIMIT_MIB:-60}

[[ -d $build/bin && -d $build/lib ]] || {
  echo "stage.sh: $build has no bin/ and lib/; build first (see tests/gpu/README.md)" >&2
  exit 2
}
[[ -x $build/bin/switchyard ]] || {
  echo "stage.sh: $build/bin/switchyard is missing; build the switchyard_cli target" >&2
  exit 2
}
probe_helper=$build/lib/switchyard/switchyard-probe
[[ -x $probe_helper ]] || {
  echo "stage.sh: $probe_helper is missing; build the switchyard_probe target (the core" \
       "lists plugins in it; without it CUDA plugins are reported unavailable)" >&2
  exit 2
}

# Libraries the GPU machine provides itself (or that must come from its driver and toolkit):
# glibc, the C++ runtime (newer there), the driver, NCCL (218 MB; the machine has its own).
system_lib='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia-|libnccl\.so)'

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib/switchyard/plugins"
manifest=$stage/MANIFEST
: > "$manifest"

is_elf() { [[ -f $1 ]] && [[ $(head -c 4 "$1" | od -An -c | tr -d ' ') == '177ELF' ]]; }

# Programs: those the GPU run uses (the CPU test binaries hold this machine's paths anyway).
if [[ ${STAGE_ALL_BINARIES:-0} == 1 ]]; then
  binaries=$(cd "$build/bin" && ls)
fi
for name in $binaries; do
  f=$build/bin/$name
  if is_elf "$f" && [[ -x $f ]]; then
    cp -p "$f" "$stage/bin/"
    echo "bin  $name  <- $f" >> "$manifest"
  else
    echo "bin  $name  not built (skipped)" >> "$manifest"
  fi
done
# Project libraries, symlinks kept (libswitchyard.so -> .so.0 -> .so.0.1.0).
for f in "$build"/lib/*.so*; do
  [[ -e $f ]] || continue
  cp -P "$f" "$stage/lib/"
  echo "lib  $(basename "$f")  <- $f" >> "$manifest"
done
cp -p "$probe_helper" "$stage/lib/switchyard/"
echo "helper  switchyard-probe  <- $probe_helper" >> "$manifest"
for f in "$build"/lib/switchyard/plugins/*.so; do
  [[ -e $f ]] || continue
  cp -p "$f" "$stage/lib/switchyard/plugins/"
  echo "plugin  $(basename "$f")  <- $f" >> "$manifest"
done

# The training demo's corpus, found relative to bin/switchyard.
if [[ -f $build/share/switchyard/corpus.txt ]]; then
  mkdir -p "$stage/share/switchyard"
  cp -p "$build/share/switchyard/corpus.txt" "$stage/share/switchyard/"
  echo "share  corpus.txt  <- $build/share/switchyard/corpus.txt" >> "$manifest"
fi

# The shared libraries they load, as ldd resolves them here, minus those of the machine.
missing=0
declare -A copied=()
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == "not" ]]; then
      if [[ ! $name =~ $system_lib ]]; then
        echo "stage.sh: $(basename "$f") needs $name, which ldd cannot find here" >&2
        missing=1
      fi
      continue
    fi
    [[ $name =~ $system_lib ]] && continue
    [[ -e $stage/lib/$name || -n ${copied[$name]:-} ]] && continue
    cp -L "$path" "$stage/lib/$name"
    copied[$name]=1
    echo "system  $name  <- $path" >> "$manifest"
  done < <(ldd "$f" 2>/dev/null || true)
done < <(find "$stage/bin" "$stage/lib" -type f -print0)

cat > "$stage/env.sh" <<'ENV'
# Source this: the staged libraries first. NVLink multicast stays off (GPU.md).
stage_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$stage_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$stage_dir/bin:$PATH"
export NCCL_NVLS_ENABLE=0
ENV
cat > "$stage/with-env" <<'WRAP'
#!/usr/bin/env bash
# with-env CMD [ARGS...]: runs CMD with the staged libraries (see env.sh).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec "$@"
WRAP
chmod +x "$stage/with-env"

size_kib=$(du -sk "$stage" | cut -f1)
echo "total  $((size_kib / 1024)) MiB ($size_kib KiB)" >> "$manifest"
cat "$manifest"
if (( size_kib > limit_mib * 1024 )); then
  echo "stage.sh: $stage is $((size_kib / 1024)) MiB, over the $limit_mib MiB that can travel" >&2
  exit 1
fi
if (( missing )); then
  echo "stage.sh: some libraries could not be resolved here (see above)" >&2
  exit 1
fi
echo "stage.sh: $stage is ready ($((size_kib / 1024)) MiB); carry it as [\"$(basename "$stage")\"]"
