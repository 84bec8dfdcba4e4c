#!/usr/bin/env bash
# Compiles the matmul programs of bench/gpu/matmul for the H200 into
# bench/gpu/out/mm_<name>.py, the modules bench/gpu/matmul.py measures.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/gpu/out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/tfc" ./tfc
for f in bench/gpu/matmul/*.tir; do
  name=$(basename "$f" .tir)
  TENSORFORGE_TILED_MATMUL=${TENSORFORGE_TILED_MATMUL:-1} "$work/tfc" --emit=triton --target=h200 "$f" -o "$out/mm_$name.py"
  python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$out/mm_$name.py"
  echo "$out/mm_$name.py"
done
