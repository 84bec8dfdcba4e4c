#!/usr/bin/env bash
# On the GPU machine, after bench/gpu/build_bulk.sh where Go is:
#
#   bash bench/gpu/bulk_resident.sh [DIR]
#
# Assembles each PTX module of DIR with ptxas (registers, spills), then times
# softmax over 4096 rows of 256000 bf16 and of 32000, and 16 rows of 256000,
# with tfc's modules beside the hand-written bulk-copy forms, a copy of the
# same bytes and torch.softmax, and checks every module on extreme rows
# (bench/gpu/bulk_softmax.py); then add + RMSNorm and RMSNorm -> SiLU -> Mul
# with their inputs copied into shared memory beside the default forms
# (bench/gpu/rows_copies.py).
set -uo pipefail
cd "$(dirname "$0")/../.."
d=${1:-.bin/bulk}
nvidia-smi --query-gpu=name --format=csv,noheader
for m in "$d"/*/softmax.ptx "$d"/rows-*/*/*.ptx; do
  echo "== ptxas $m"
  ptxas -arch=sm_90 -v "$m" -o /dev/null 2>&1 | grep -E "registers|rror|spill" | sed 's/^ptxas info *: //'
done
t256="ptx-b8=$d/b8/softmax.py,ptx-b8-t512=$d/b8t512/softmax.py,ptx-b8-t256=$d/b8t256/softmax.py,ptx-b8-l2=$d/b8l2/softmax.py"
t256="$t256,ptx-b16=$d/b16/softmax.py,ptx-online=$d/o256/softmax.py,triton-resident=$d/t32/softmax.py,triton-O2=$d/to256/softmax.py"
t32="ptx-s1=$d/c1/softmax.py,ptx-s1-t256=$d/c1t256/softmax.py,ptx-onepass=$d/o32/softmax.py"
echo "## python3 bench/gpu/bulk_softmax.py --forms 8/256,8/512 --tfc ..."
timeout 200 python3 bench/gpu/bulk_softmax.py --forms 8/256,8/512 --tfc "$t256"
echo "## python3 bench/gpu/bulk_softmax.py --cols 32000 --forms 1/256,1/512 --tfc ..."
timeout 110 python3 bench/gpu/bulk_softmax.py --cols 32000 --forms 1/256,1/512 --tfc "$t32"
echo "## python3 bench/gpu/bulk_softmax.py --rows 16 --forms 8/256 --tfc ..."
timeout 70 python3 bench/gpu/bulk_softmax.py --rows 16 --forms 8/256 --tfc "$t256"
echo "## python3 bench/gpu/rows_copies.py --forms ..."
timeout 150 python3 bench/gpu/rows_copies.py --forms "ptx-default=$d/rows-def,ptx-copies=$d/rows-cp,ptx-copies-t512=$d/rows-cp512,triton-default=bench/gpu/out"
