#!/usr/bin/env bash
# Builds scripts/oracle/fit_bytes.cpp against the fit oracle that ../shared/oracle/build_fit.sh built in DIR
# (default .oracle-fit): DIR/fit_bytes takes llama-fit-params's flags and prints each device's bytes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DEST=$(cd "${1:-.oracle-fit}" && pwd)
L=$DEST/src/vendor/llama.cpp
B=$DEST/build
inc=(-I"$L/include" -I"$L/ggml/include" -I"$L/common" -I"$L/vendor" -I"$L/src")
g++ -O1 -std=c++17 "${inc[@]}" "$here/fit_bytes.cpp" -L"$B/bin" -lllama-common -lllama -lggml -lggml-base \
  -Wl,-rpath,"$B/bin" -lpthread -o "$DEST/fit_bytes"
echo "$DEST/fit_bytes"
