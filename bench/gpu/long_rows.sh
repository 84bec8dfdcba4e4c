#!/usr/bin/env bash
# Softmax and logsumexp over long rows (vocabularies of 32000 and 256000
# logits), on the GPU machine, after build.sh has been run where Go is:
#
#   bash bench/gpu/long_rows.sh [OLD]
#
# Runs bench/gpu/run.py on the long-row workloads: 4096 rows against eager
# and torch.compile (both modes), then 1, 4 and 16 rows (GPU time from
# CUDA-graph replay beside torch.compile's), first the Triton modules,
# then the PTX launchers (quick: torch.compile's default mode). OLD, when
# given, is a directory of modules of the same workloads built by another
# compiler (Triton NAME.py and PTX NAME.ptx/), timed in the same session for
# a before/after comparison. Results go to $OUT/{triton,ptx,old-triton,old-ptx}/.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/long-rows}
big='softmax_4096x32000,softmax_4096x256000,logsumexp_4096x32000,logsumexp_4096x256000'
dec='decode_softmax_*,decode_logsumexp_*'
python3 bench/gpu/run.py --only "$big,$dec" --out "$out/triton" 2>&1 | tee "$out/triton.log"
python3 bench/gpu/ptx_modules.py bench/gpu/out /tmp/ptxmods >/dev/null
python3 bench/gpu/run.py --quick --modules /tmp/ptxmods --only "$big" --out "$out/ptx" 2>&1 | tee "$out/ptx.log"
if [ $# -ge 1 ]; then
  python3 bench/gpu/run.py --quick --modules "$1" --only 'softmax_4096x256000,logsumexp_4096x256000' --out "$out/old-triton" 2>&1 | tee "$out/old-triton.log"
  python3 bench/gpu/ptx_modules.py "$1" /tmp/ptxold >/dev/null
  python3 bench/gpu/run.py --quick --modules /tmp/ptxold --only 'softmax_4096x256000,logsumexp_4096x256000' --out "$out/old-ptx" 2>&1 | tee "$out/old-ptx.log"
fi
