#!/usr/bin/env bash
# Packs what scripts/oracle/cuda/record.sh needs on a machine with an NVIDIA GPU and no network into
# DEST (default .oracle-cuda, git-ignored): the llama.cpp source the fit oracle is built from (the 2026-10-01 tree
# vendored by llama-cpp-python 0.3.36, from ../shared/oracle/build_fit.sh's DIR/src; backends other than CPU and
# CUDA, models, docs, examples and tests left out: ~9 MB) scripts/oracle/fit_bytes.cpp and the oracle's harness.cpp.
# usage: scripts/oracle/cuda/prepare.sh [FIT_DIR (default .oracle-fit)] [DEST]
# then, on the device (kvplan's device tool): run bash scripts/oracle/cuda/record.sh with carry [".oracle-cuda"].
set -euo pipefail
FIT=$(cd "${1:-.oracle-fit}" && pwd)
DEST=${2:-.oracle-cuda}
mkdir -p "$DEST"
src=$FIT/src/vendor
skip=(vulkan sycl metal opencl cann musa webgpu hexagon zdnn zendnn openvino)
excl=()
for b in "${skip[@]}"; do excl+=(--exclude="./llama.cpp/ggml/src/ggml-$b"); done
for d in models docs examples app media tests benches tools/server/public tools/server/webui; do
  excl+=(--exclude="./llama.cpp/$d")
done
tar czf "$DEST/llama-src.tgz" -C "$src" "${excl[@]}" ./llama.cpp
cp "$(dirname "$0")/../fit_bytes.cpp" "$DEST/fit_bytes.cpp"
cp "$(dirname "$0")/../../../../shared/oracle/harness.cpp" "$DEST/harness.cpp"
ls -la "$DEST"
