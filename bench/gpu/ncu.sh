#!/usr/bin/env bash
# DRAM bytes our kernels move, measured by Nsight Compute, beside the bytes
# `tfc memory-traffic` predicted (bench/gpu/out/predicted.json). Runs on the
# GPU machine, after build.sh has been run where Go is:
#
#   bash bench/gpu/ncu.sh [NAME...]    (default: every prefill workload)
#
# One process per workload profiles one call of our function (ncu_driver.py),
# with the clocks left alone (--clock-control none) and ncu's default cache
# control (caches flushed before each kernel). Writes $OUT/ncu.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=(add_rmsnorm_4096x8192 add_rmsnorm_16384x8192 add_rmsnorm_4096x5120 add_rmsnorm_4096x14336
    rms_silu_mul_4096x8192 rms_silu_mul_16384x8192 rms_silu_mul_4096x5120 rms_silu_mul_4096x14336
    swiglu_4096x28672 softmax_32768x4096 logsumexp_32768x4096 logaddexp_64M quantize_64M)
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "ncu.sh: no ncu on this machine" >&2; exit 1; }
tmp=$(mktemp -d)
for n in "${names[@]}"; do
  if ! "$ncu" --clock-control none --profile-from-start off --csv --print-units base \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum --log-file "$tmp/$n.csv" \
      python3 bench/gpu/ncu_driver.py "$n" >"$tmp/$n.out" 2>&1; then
    echo "$n: ncu failed:"
    tail -5 "$tmp/$n.out" "$tmp/$n.csv" 2>/dev/null
  fi
done
python3 bench/gpu/ncu_driver.py --report "$tmp" "${names[@]}"
