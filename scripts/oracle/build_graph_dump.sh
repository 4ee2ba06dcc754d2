#!/usr/bin/env bash
# Builds scripts/oracle/graph_dump.cpp against the oracle that ../shared/oracle/build.sh built in DIR (default .oracle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DEST=$(cd "${1:-.oracle}" && pwd)
L=$DEST/src/vendor/llama.cpp
LIB=$DEST/build/bin
inc=(-I"$L/include" -I"$L/ggml/include" -I"$L/ggml/src" -I"$L/src" -I"$L/common" -I"$L/vendor")
g++ -O1 -std=c++17 "${inc[@]}" "$here/graph_dump.cpp" -L"$LIB" -lllama -lggml -lggml-base -Wl,-rpath,"$LIB" -o "$DEST/graph_dump"
echo "$DEST/graph_dump"
