#!/usr/bin/env bash
# The PTX online kernels with their chunk loops pipelined
# (TENSORFORGE_PTX_PIPELINE=1, emit/ptx/pipeline.go) beside the default, in
# one call, two rounds alternating. Here (Go):
#
#   bash bench/gpu/pipeline_ab.sh build
#
# writes .bin/tfc and both forms of the online workloads into
# .bin/pipe/off and .bin/pipe/on; there (carry .bin):
#
#   bash bench/gpu/pipeline_ab.sh run OUT
#
# runs bench/gpu/run.py on each (every result checked against float64).
set -uo pipefail
cd "$(dirname "$0")/../.."
work="logsumexp_32000 logsumexp_256000 cross_entropy_151936 softmax_32000 softmax_256000"
case ${1:-} in
build)
  CGO_ENABLED=0 go build -o .bin/tfc ./tfc
  for form in off on; do
    rm -rf ".bin/pipe/$form"
    mkdir -p ".bin/pipe/$form"
    for w in $work; do
      v=0
      [ "$form" = on ] && v=1
      TENSORFORGE_PTX_PIPELINE=$v .bin/tfc --emit=ptx --target=h200 "bench/gpu/workloads/$w.tir" -o ".bin/pipe/$form/$w.ptx"
    done
  done
  grep -l "next chunk's loads" .bin/pipe/on/*/*.ptx
  ;;
run)
  out=${2:-/tmp/pipe}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name --format=csv,noheader
  for form in off on; do
    python3 bench/gpu/ptx_modules.py ".bin/pipe/$form" "/tmp/pipe-$form" >/dev/null
  done
  for r in 1 2; do
    for form in off on; do
      echo "## $form round $r"
      timeout 120 python3 bench/gpu/run.py --quick --modules "/tmp/pipe-$form" --out "$out/$form-$r" \
        --only "logsumexp_4096x*,cross_entropy_4096x151936,softmax_4096x*,decode_logsumexp_*,decode_softmax_*,decode_cross_entropy_*" \
        2>&1 | grep -vE "Warning|: ok;"
    done
  done
  ;;
*)
  sed -n '2,14p' "$0"
  exit 2
  ;;
esac
