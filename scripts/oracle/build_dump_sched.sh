#!/usr/bin/env bash
# Builds scripts/oracle/dump_sched.c against the fit oracle (../shared/oracle/build_fit.sh) in DIR (default
# .oracle-fit): LD_PRELOAD=DIR/dump_sched.so DUMP_SCHED=out.jsonl DUMP_SCHED_N=3 DIR/fit_bytes ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DEST=$(cd "${1:-.oracle-fit}" && pwd)
L=$DEST/src/vendor/llama.cpp
gcc -O1 -shared -fPIC -I"$L/ggml/include" -I"$L/ggml/src" "$here/dump_sched.c" -L"$DEST/build/bin" -lggml-base \
  -ldl -o "$DEST/dump_sched.so"
echo "$DEST/dump_sched.so"
