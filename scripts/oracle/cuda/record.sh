#!/usr/bin/env bash
# Records llama.cpp's own compute buffers on a real CUDA GPU: the single-device placements of
# tests/fixtures/oracle/compute_devices.json (recorded on RPC devices with the CPU backend's rules), each measured
# as llama.cpp's fit measures it (scripts/oracle/fit_bytes.cpp: a no_alloc context, llama_get_memory_breakdown)
# with the GPU as CUDA0 — the data that proves or corrects kvplan's CUDA rules (read from ggml-cuda's source,
# kvplan/runtimes/llamacpp/compute/sched.py CUDA). Writes $OUT/compute_cuda.json (or ./compute_cuda.json),
# rewritten after every case so that a run cut short keeps what it measured.
# Then the harness (../shared/oracle/harness.cpp, no_alloc) on compute_graph.json's fixtures with every layer on the
# GPU: $OUT/compute_cuda_graph.json (scripts/oracle/cuda/record_graph_cases.py), until the deadline.
# Needs: nvcc, cmake, python3 with numpy (the GGUFs are written with the source's own gguf-py). No network.
# usage: bash scripts/oracle/cuda/record.sh [SRC_DIR (default .oracle-cuda)]
#        DRY_RUN_BUILD=DIR bash scripts/oracle/cuda/record.sh   (no GPU: a CPU build of the fit oracle's llama.cpp
#                                                              in DIR, to check the plumbing; rows are Host only)
# Time: the CUDA build (PTX for sm_90 by default, CUDA_ARCH=...: nothing is launched, so no kernel is ever
# JIT-compiled; skipping ptxas halves the build) takes minutes on 16 cores; DEADLINE_S (default 540)
# bounds the whole run.
set -euo pipefail
t0=$(date +%s)
SRC=$(cd "${1:-.oracle-cuda}" && pwd)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUTDIR=${OUT:-$PWD}
WORK=${WORK:-/tmp/kvplan-cuda}
mkdir -p "$WORK"
if [[ -n ${DRY_RUN_BUILD:-} ]]; then
  B=$(cd "$DRY_RUN_BUILD" && pwd)
  L=$B/src/vendor/llama.cpp
  BIN=$B/build/bin
  FIT_BYTES=$B/fit_bytes
  HARNESS=${DRY_HARNESS:-$B/harness}
else
  [[ -d $WORK/llama.cpp ]] || tar xzf "$SRC/llama-src.tgz" -C "$WORK"
  L=$WORK/llama.cpp
  BIN=$WORK/build/bin
  FIT_BYTES=$WORK/fit_bytes
  HARNESS=$WORK/harness
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  export CUDA_MODULE_LOADING=LAZY  # a PTX-only build JIT-compiles a kernel when first launched; these runs launch none
  if [[ ! -x $FIT_BYTES ]]; then
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$L" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90-virtual}" "${gen[@]}" -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF >"$WORK/cmake.log"
    # bounded, so that a build too slow for one call still returns its log (a second call continues it)
    timeout $(( t0 + ${DEADLINE_S:-540} - $(date +%s) - 30 )) cmake --build "$WORK/build" -j "$(nproc)" --target llama llama-common >>"$WORK/cmake.log" 2>&1 \
      || { tail -5 "$WORK/cmake.log"; cp "$WORK/cmake.log" "$OUTDIR/" || true; exit 1; }
    inc=(-I"$L/include" -I"$L/ggml/include" -I"$L/common" -I"$L/vendor" -I"$L/src")
    g++ -O1 -std=c++17 "${inc[@]}" "$SRC/fit_bytes.cpp" -L"$BIN" -lllama-common -lllama -lggml -lggml-base \
      -Wl,-rpath,"$BIN" -lpthread -o "$FIT_BYTES"
    g++ -O1 -std=c++17 "${inc[@]}" "$SRC/harness.cpp" -L"$BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$BIN" \
      -o "$HARNESS"
  fi
fi
echo "built in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
PYTHONPATH="$L/gguf-py:$ROOT/tests:$ROOT" python3 "$ROOT/scripts/oracle/cuda/record_cases.py" "$FIT_BYTES" \
  "$OUTDIR/compute_cuda.json" "$WORK/models" "$(( t0 + ${DEADLINE_S:-540} ))"
echo "fit placements recorded at $(( $(date +%s) - t0 )) s"
python3 "$ROOT/scripts/oracle/cuda/record_graph_cases.py" "$HARNESS" "$OUTDIR/compute_cuda_graph.json" \
  "$(( t0 + ${DEADLINE_S:-540} ))" | tail -3
echo "done at $(( $(date +%s) - t0 )) s"
