#!/usr/bin/env bash
# The LLVM matmul kernels against numpy's BLAS, on the same inputs, in one run:
#
#   bash bench/cpu/matmul.sh [SIZES...]       (default: 1024 2048 4096)
#
# For each n, an f32 n x n x n matmul (tfc run --time: the median of 5 runs
# of the compiled program, in-process, after one warm-up) and numpy's a @ b
# (the median of 5, of 3 from 4096 on) on the same .npy inputs; the results are compared
# (tfc compare-npy, which allows f32's sum-order differences as a relative
# 1e-4). Prints GFLOP/s of both and their ratio. numpy is whatever BLAS
# python3-numpy links (`python3 -c 'import numpy; numpy.show_config()'`).
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=${*:-1024 2048 4096}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/tfc" ./tfc
py=${PYTHON:-/usr/bin/python3}
printf '%6s %12s %12s %8s  %s\n' n "tfc GFLOP/s" "numpy GFLOP/s" ratio check
for n in $sizes; do
  cat > "$work/mm.tir" <<TIR
func.func @mm(%a: tensor<${n}x${n}xf32>, %b: tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32> {
  %y = graph.matmul %a, %b : (tensor<${n}x${n}xf32>, tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32>
  return %y : tensor<${n}x${n}xf32>
}
TIR
  np_s=$("$py" - "$work" "$n" <<'PY'
import sys, time, numpy as np
work, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
np.save(f"{work}/a.npy", a)
np.save(f"{work}/b.npy", b)
y = a @ b
ts = []
for _ in range(5 if n < 4096 else 3):
    t = time.perf_counter()
    y = a @ b
    ts.append(time.perf_counter() - t)
np.save(f"{work}/ref.npy", y)
print(sorted(ts)[2])
PY
)
  mkdir -p "$work/out"
  tfc_line=$("$work/tfc" run "$work/mm.tir" --input a="$work/a.npy" --input b="$work/b.npy" --output "$work/out" --time=5 2>&1 >/dev/null | grep median)
  tfc_s=$("$py" -c 'import sys,re; m=re.search(r"median ([0-9.]+)(ms|s|µs)", sys.argv[1]); v=float(m.group(1)); print(v*{"s":1,"ms":1e-3,"µs":1e-6}[m.group(2)])' "$tfc_line")
  check=$("$work/tfc" compare-npy "$work/out/result0.npy" "$work/ref.npy" --rtol 1e-4 --atol 1e-3 2>&1 | head -1 | cut -c1-60)
  "$py" -c 'import sys; n,t,p=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); f=2*n**3/1e9; print(f"{n:6d} {f/t:12.1f} {f/p:12.1f} {p/t:8.2f}  ", end="")' "$n" "$tfc_s" "$np_s"
  echo "$check"
done
