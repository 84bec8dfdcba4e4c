#!/usr/bin/env bash
# The PTX matmul's decode form (16- and 32-row tiles, emit/ptx/decode.go)
# beside the kernels it replaces for few rows (TENSORFORGE_PTX_DECODE=0:
# the 128-row wgmma or mma.sync tiles), the 16-row twin alone
# (TENSORFORGE_PTX_DECODE_ROWS=16, form r16: measure with ROWS 1,32), BK
# 256, cuBLAS and the Triton kernels, in one call, rounds alternating.
# Here (Go):
#
#   bash bench/gpu/decode_ab.sh build
#
# writes .bin/tfc, the forms of bench/gpu/matmul/*.tir (w8up: int8
# weights, the dequantizing forms; w8a8: int8 activations too, the int8
# form), of the attention-scores workload and of
# emit/ptx/testdata/{dequant,int8}/matmuls.tir (assembled only) into
# .bin/dec/{on,off,r16,bk256} (bk256: TENSORFORGE_PTX_DECODE_BK=256), the
# Triton modules into .bin/mmtri (and, with TENSORFORGE_TRITON_I8=bits,
# .bin/mmtri-bits: their W8A16 kernel timed again in its own step); there
# (carry .bin):
#
#   [FORMS="on off"] [ROUNDS=1] bash bench/gpu/decode_ab.sh run OUT [ROWS]
#
# assembles them with ptxas (registers, spills), then runs
# bench/gpu/matmul_ptx.py (every result checked on sampled rows against
# float64, weights read from DRAM) and bench/gpu/run.py's
# decode_gqa_scores_32x2048 (checked against float64) on each.
set -uo pipefail
cd "$(dirname "$0")/../.."
case ${1:-} in
build)
  CGO_ENABLED=0 go build -o .bin/tfc ./tfc
  for form in on off r16 bk256; do
    v=1 rows=32 bk=128
    [ "$form" = off ] && v=0
    [ "$form" = r16 ] && rows=16
    [ "$form" = bk256 ] && bk=256
    rm -rf ".bin/dec/$form"
    mkdir -p ".bin/dec/$form"
    for f in bench/gpu/matmul/{qkv,qo,kv,up,down,gateup,w8up,w8a8}.tir bench/gpu/workloads/gqa_scores.tir \
      emit/ptx/testdata/dequant/matmuls.tir emit/ptx/testdata/int8/matmuls.tir; do
      name=$(basename "$f" .tir)
      [ "$name" = matmuls ] && name=$(basename "$(dirname "$f")") # dequant, int8
      TENSORFORGE_PTX_DECODE=$v TENSORFORGE_PTX_DECODE_ROWS=$rows TENSORFORGE_PTX_DECODE_BK=$bk \
        .bin/tfc --emit=ptx --target=h200 "$f" -o ".bin/dec/$form/$name.ptx"
    done
  done
  rm -rf .bin/mmtri .bin/mmtri-bits
  bash bench/gpu/build_matmul.sh .bin/mmtri >/dev/null
  TENSORFORGE_TRITON_I8=bits bash bench/gpu/build_matmul.sh .bin/mmtri-bits >/dev/null
  grep -l "decode form" .bin/dec/on/*/*.ptx
  ;;
run)
  out=${2:-/tmp/dec}
  rows=${3:-1,16}
  forms=${FORMS:-on off r16 bk256}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name --format=csv,noheader
  bash bench/gpu/ptx_check.sh .bin/dec/on 2>&1 | grep -E "_m16|_m32|gqa|w8up|w8a8|q_|a8_|u8s8|k200|requant|two_|rror"
  for form in $forms; do
    python3 bench/gpu/ptx_modules.py ".bin/dec/$form" "/tmp/dec-$form" >/dev/null
  done
  for r in $(seq "${ROUNDS:-2}"); do
    for form in $forms; do
      echo "## $form round $r"
      timeout 150 python3 bench/gpu/matmul_ptx.py ".bin/dec/$form" --triton .bin/mmtri --rows "$rows" \
        --only qkv,qo,kv,up,down,gateup,w8up,w8a8 --out "$out/$form-$r" 2>&1 | grep -v Warning
      timeout 60 python3 bench/gpu/run.py --quick --modules "/tmp/dec-$form" --out "$out/gqa-$form-$r" \
        --only decode_gqa_scores_32x2048 2>&1 | grep -v Warning
    done
    if [ -d .bin/mmtri-bits ]; then
      # the Triton W8A16 kernel converting through f32 bits
      # (TENSORFORGE_TRITON_I8=bits): its triton column against the above
      echo "## triton int8 through f32 bits, round $r"
      timeout 90 python3 bench/gpu/matmul_ptx.py .bin/dec/on --triton .bin/mmtri-bits --rows "$rows" \
        --only up,w8up --out "$out/bits-$r" 2>&1 | grep -v Warning
    fi
  done
  ;;
*)
  sed -n '2,20p' "$0"
  exit 2
  ;;
esac
