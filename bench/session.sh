#!/usr/bin/env bash
# One device call that measures what the open issues report, in order, each
# step bounded so that a slow one leaves the rest their time. On the GPU
# machine, after `CGO_ENABLED=0 go build -o .bin/tfc ./tfc` and
# `bash bench/gpu/build.sh` here (carry .bin):
#
#   bash bench/session.sh STEPS OUT
#
# STEPS is a comma list of: kernels (bench/gpu/run.py, Triton then PTX:
# the row, RoPE, cross-entropy and decode workloads against eager,
# torch.compile and a copy), vocab (softmax over 256000 and 32000 beside the
# hand-written bulk-copy kernel), e2e-MODEL (bench/e2e/run.py on one model's
# layer, every shape), greedy (the 2-layer LlamaForCausalLM decode loop),
# autotune-MODEL (one model's headline shapes, prefill 1x4096 and decode
# b32, beside Inductor's max-autotune-no-cudagraphs too: it tunes for
# minutes), matmul (the PTX matmul's wgmma and mma.sync forms beside cuBLAS,
# after `bash bench/gpu/wgmma.sh build` here), pipeline (the PTX online
# kernels pipelined beside the default, after `bash
# bench/gpu/pipeline_ab.sh build` here), decode (the PTX matmul's decode
# form, the int8-weight up projection's dequantizing forms, beside cuBLAS
# and Triton at 1, 16, 32 and 4096 rows, after `bash
# bench/gpu/decode_ab.sh build` here; DECODE_FORMS="on r16 bk256" and
# DECODE_ROWS choose decode_ab.sh's forms and rows), prefetch (the PTX
# decode-row kernels with the weight's loads ahead of the combine beside
# the default, twice, after `bash bench/gpu/build_prefetch.sh` here).
# Results go to OUT (run.py's JSON, e2e JSON) and standard output.
#
# Every issue's figures in three calls of at most 10 minutes (about 25 of a
# session's 30 minutes of device time):
#   kernels,vocab,matmul,pipeline  (or kernels,vocab,decode)
#   e2e-llama3-8b,e2e-qwen3-8b,e2e-mistral-7b,e2e-gemma2-9b,e2e-deepseek-v3
#   greedy,autotune-llama3-8b
set -uo pipefail
cd "$(dirname "$0")/.."
steps=${1:-kernels,vocab,e2e-llama3-8b}
out=${2:-/tmp/session}
mkdir -p "$out"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
modes="eager,inductor default,inductor reduce-overhead,tensorforge triton,tensorforge triton +cudagraphs,tensorforge ptx +cudagraphs"
IFS=, read -ra list <<<"$steps"
for s in "${list[@]}"; do
  start=$(date +%s)
  echo "## $s"
  case $s in
  kernels)
    timeout 170 python3 bench/gpu/run.py --quick --commit "$commit" --out "$out/triton" 2>&1 | grep -v Warning
    python3 bench/gpu/ptx_modules.py bench/gpu/out /tmp/ptxmods >/dev/null
    timeout 170 python3 bench/gpu/run.py --quick --commit "$commit" --modules /tmp/ptxmods --out "$out/ptx" 2>&1 | grep -v Warning
    ;;
  vocab)
    o=bench/gpu/out/softmax_256000
    # the backward form as persistent programs, PROGRAMS per multiprocessor
    # with WARPS warps (online_persist.py, a rewrite of its Python): fewer
    # rows in flight, more of each in L2 for the second pass
    for pw in 1/8 2/8 1/16 4/4; do
      python3 bench/gpu/online_persist.py "${o}_backward.py" "$out/softmax_256000_p${pw%/*}w${pw#*/}.py" \
        softmax_k3 "${pw%/*}" "${pw#*/}"
    done
    p="$out/softmax_256000"
    timeout 150 python3 bench/gpu/bulk_softmax.py --forms 8/512 \
      --tfc "ptx-O2=$o.ptx/softmax.py,triton-O2=$o.py,triton-backward=${o}_backward.py,triton-p1w8=${p}_p1w8.py,triton-p2w8=${p}_p2w8.py,triton-p1w16=${p}_p1w16.py,triton-p4w4=${p}_p4w4.py" 2>&1 | tail -24
    timeout 45 python3 bench/gpu/bulk_softmax.py --cols 32000 --forms 1/512 \
      --tfc "ptx-O2=bench/gpu/out/softmax_32000.ptx/softmax.py,triton-O2=bench/gpu/out/softmax_32000.py" 2>&1 | tail -10
    ;;
  e2e-*)
    m=${s#e2e-}
    TENSORFORGE_TFC=.bin/tfc timeout 240 python3 bench/e2e/run.py "$out/e2e-$m" --models "$m" --no-greedy \
      --autotune none --modes "$modes" 2>&1 | grep -E " \| |rror"
    ;;
  autotune-*)
    m=${s#autotune-}
    TENSORFORGE_TFC=.bin/tfc timeout 400 python3 bench/e2e/run.py "$out/autotune-$m" --models "$m" --no-greedy \
      --autotune headline --shapes "prefill 1x4096,decode b32 kv2048" \
      --modes "$modes,inductor max-autotune-no-cudagraphs" 2>&1 | grep -E " \| |rror"
    ;;
  matmul)
    timeout 330 bash bench/gpu/wgmma.sh run "$out/matmul" 2>&1 | grep -vE "Warning|^\s*$" | head -80
    ;;
  pipeline)
    timeout 300 bash bench/gpu/pipeline_ab.sh run "$out/pipeline" 2>&1 | tail -40
    ;;
  decode)
    FORMS="${DECODE_FORMS:-on}" ROUNDS=1 timeout 300 bash bench/gpu/decode_ab.sh run "$out/decode" "${DECODE_ROWS:-1,16,32,4096}" 2>&1 | grep -vE "Warning|^\s*$" | tail -100
    ;;
  prefetch)
    # the PTX row kernels of decode's few rows with the weight's loads
    # ahead of the combine (TENSORFORGE_PTX_PREFETCH_SHARED=1, built into
    # .bin/pf by bench/gpu/build_prefetch.sh here) beside the default
    python3 bench/gpu/ptx_modules.py bench/gpu/out /tmp/ptxmods >/dev/null
    python3 bench/gpu/ptx_modules.py .bin/pf /tmp/pfmods >/dev/null
    only="decode_rms_silu_mul*,decode_add_rmsnorm*,decode_k_norm*"
    for m in ptxmods pfmods ptxmods pfmods; do
      echo "### $m"
      timeout 150 python3 bench/gpu/run.py --quick --only "$only" --commit "$commit" --modules /tmp/$m --out "$out/$m" 2>&1 | grep -E "^decode|GPU" | grep -v Warning
    done
    ;;
  greedy)
    TENSORFORGE_TFC=.bin/tfc timeout 200 python3 bench/e2e/run.py "$out/greedy" --models '' 2>&1 | grep -E "greedy|rror"
    ;;
  *)
    echo "unknown step $s"
    ;;
  esac
  echo "## $s took $(($(date +%s) - start)) s"
done
