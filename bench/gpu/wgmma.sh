#!/usr/bin/env bash
# The PTX matmul's wgmma form (emit/ptx/wgmma.go) on the GPU beside its
# mma.sync form, cuBLAS and the Triton kernels, in one call. Here (Go):
#
#   bash bench/gpu/wgmma.sh build
#
# writes .bin/tfc and both forms of bench/gpu/matmul/*.tir into
# .bin/ptxmm_sync and .bin/ptxmm_wgmma (TENSORFORGE_PTX_MMA); there (carry
# .bin):
#
#   bash bench/gpu/wgmma.sh run OUT [ROWS]
#
# assembles both with ptxas (bench/gpu/ptx_check.sh: registers, spills,
# ptxas's warnings), then runs bench/gpu/matmul_ptx.py on each: every
# result checked on sampled rows against float64, timed beside cuBLAS.
set -uo pipefail
cd "$(dirname "$0")/../.."
case ${1:-} in
build)
  CGO_ENABLED=0 go build -o .bin/tfc ./tfc
  for form in sync wgmma; do
    rm -rf ".bin/ptxmm_$form"
    for f in bench/gpu/matmul/*.tir; do
      TENSORFORGE_PTX_MMA=$form .bin/tfc --emit=ptx --target=h200 "$f" -o ".bin/ptxmm_$form/$(basename "$f" .tir).ptx"
    done
  done
  grep -l wgmma.mma_async .bin/ptxmm_wgmma/*/*.ptx
  ;;
run)
  out=${2:-/tmp/wgmma}
  rows=${3:-4096,32,1}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name --format=csv,noheader
  bash bench/gpu/ptx_check.sh .bin/ptxmm_wgmma .bin/ptxmm_sync 2>&1 | grep -v "w8"
  for form in wgmma sync; do
    echo "## $form"
    timeout 200 python3 bench/gpu/matmul_ptx.py ".bin/ptxmm_$form" --rows "$rows" --out "$out/$form" 2>&1 | grep -v Warning
  done
  ;;
*)
  sed -n '2,15p' "$0"
  exit 2
  ;;
esac
