#!/usr/bin/env bash
# `tfc run` against NumPy on the same job, in one run: load a 128 MB f32
# .npy (32M elements), negate it, save the result. Rounds alternate the
# two so that they see the same load; each keeps its best and median
# wall time (whole processes: start-up, compile or import, I/O, compute).
# tfc is timed warm (its program cache filled by a first run), with the
# program not cached (opt, llc and the link run; the runtime's objects
# cached, as after any earlier compile on the machine) and cold (an empty
# cache: the runtime is compiled too).
# Needs python3 with NumPy (PYTHON, default /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-7}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
go build -o "$W/tfc" ./tfc
cat > "$W/neg.tir" <<'TIR'
func.func @neg(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.neg %x : tensor<?xf32>
  return %y : tensor<?xf32>
}
TIR
"$PY" -c "import numpy as np; np.save('$W/x.npy', np.random.default_rng(0).standard_normal(32 << 20, dtype=np.float32))"
now() { date +%s.%N; }
t_tfc=(); t_new=(); t_cold=(); t_np=()
TFC_CACHE_DIR="$W/cache" "$W/tfc" run "$W/neg.tir" --input x="$W/x.npy" --output "$W/o" # fills the cache
for r in $(seq "$ROUNDS"); do
  a=$(now); TFC_CACHE_DIR="$W/cache" "$W/tfc" run "$W/neg.tir" --input x="$W/x.npy" --output "$W/o"; b=$(now)
  t_tfc+=("$(echo "$b - $a" | bc)")
  a=$(now); "$PY" -c "import numpy as np; np.save('$W/np.npy', -np.load('$W/x.npy'))"; b=$(now)
  t_np+=("$(echo "$b - $a" | bc)")
  mkdir -p "$W/new$r/cpurt" && cp "$W"/cache/cpurt/*.o "$W/new$r/cpurt/"
  a=$(now); TFC_CACHE_DIR="$W/new$r" "$W/tfc" run "$W/neg.tir" --input x="$W/x.npy" --output "$W/o"; b=$(now)
  t_new+=("$(echo "$b - $a" | bc)")
  a=$(now); TFC_CACHE_DIR="$W/cold$r" "$W/tfc" run "$W/neg.tir" --input x="$W/x.npy" --output "$W/o"; b=$(now)
  t_cold+=("$(echo "$b - $a" | bc)")
done
"$PY" -c "import numpy as np; a=np.load('$W/np.npy'); b=np.load('$W/o/result0.npy'); assert a.dtype == b.dtype and (a == b).all(); print('results identical:', a.dtype, a.shape)"
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "best %.3f s  median %.3f s", v[1], v[int((NR+1)/2)]}'; }
echo "numpy load, negate, save:        $(stats "${t_np[@]}")"
echo "tfc run (program cached):        $(stats "${t_tfc[@]}")"
echo "tfc run (program not cached):    $(stats "${t_new[@]}")"
echo "tfc run (empty cache):           $(stats "${t_cold[@]}")"
