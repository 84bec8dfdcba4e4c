#!/usr/bin/env bash
# The PTX row kernels of the decode workloads with every input's loads,
# the weight's too, issued ahead of the combine
# (TENSORFORGE_PTX_PREFETCH_SHARED=1), into .bin/pf/<name>.ptx, for
# `bash bench/session.sh prefetch OUT` on the GPU machine (carry .bin).
set -euo pipefail
cd "$(dirname "$0")/../.."
CGO_ENABLED=0 go build -o .bin/tfc ./tfc
mkdir -p .bin/pf
for n in rms_silu_mul_5120 rms_silu_mul_8192 rms_silu_mul_14336 add_rmsnorm_5120 add_rmsnorm_8192 add_rmsnorm_14336 k_norm; do
  rm -rf ".bin/pf/$n.ptx"
  TENSORFORGE_PTX_PREFETCH_SHARED=1 .bin/tfc --emit=ptx --target=h200 "bench/gpu/workloads/$n.tir" -o ".bin/pf/$n.ptx"
done
