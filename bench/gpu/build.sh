#!/usr/bin/env bash
# Compiles every workload of bench/gpu/workloads for the H200, where Go is:
#
#   bench/gpu/out/<name>.py      the Triton module (tfc --emit=triton --target=h200)
#   bench/gpu/out/selftest_*.py  the same for the programs of selftest.py
#   bench/gpu/out/<name>.ptx/    the PTX kernels and launcher, once tfc has --emit=ptx
#   bench/gpu/out/predicted.json the DRAM bytes `tfc memory-traffic` predicts for
#                                every measured shape (after fusion)
#
# The GPU machine has no Go: commit bench/gpu/out and run bench/gpu/run.py there.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/gpu/out
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tfc="$work/tfc"
go build -o "$tfc" ./tfc

# check that a module is valid Python (without writing bytecode beside it)
check() {
  python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$1"
}

# a PTX emitter is used when this tfc has one
ptx=no
if "$tfc" --emit=ptx --target=h200 -o "$work/probe" bench/gpu/workloads/logaddexp.tir 2>/dev/null; then
  ptx=yes
fi

for f in bench/gpu/workloads/*.tir; do
  name=$(basename "$f" .tir)
  "$tfc" --emit=triton --target=h200 "$f" -o "$out/$name.py"
  check "$out/$name.py"
  if [ "$ptx" = yes ]; then
    rm -rf "$out/$name.ptx"
    "$tfc" --emit=ptx --target=h200 "$f" -o "$out/$name.ptx"
  fi
  echo "$out/$name.py"
done

# softmax over rows of 256000 as a resident split (lower-to-loops{resident=true},
# not the default): Triton's groups of 32 meet on counters, PTX's of 8 (splits
# of 32000) are thread-block clusters
resident='canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{resident=true%s},sram-alloc'
"$tfc" --pass-pipeline="$(printf "$resident" "")" --emit=triton --target=h200 \
  bench/gpu/workloads/softmax_256000.tir -o "$out/softmax_256000_resident.py"
check "$out/softmax_256000_resident.py"
if [ "$ptx" = yes ]; then
  rm -rf "$out/softmax_256000_resident.ptx"
  "$tfc" --pass-pipeline="$(printf "$resident" ",resident-bytes=131072")" --emit=ptx --target=h200 \
    bench/gpu/workloads/softmax_256000.tir -o "$out/softmax_256000_resident.ptx"
fi
echo "$out/softmax_256000_resident.py"
# the online softmax's second pass backwards (TENSORFORGE_TRITON_ONLINE=backward,
# not the default yet), for bulk_softmax.py to time beside the default
TENSORFORGE_TRITON_ONLINE=backward "$tfc" --emit=triton --target=h200 \
  bench/gpu/workloads/softmax_256000.tir -o "$out/softmax_256000_backward.py"
check "$out/softmax_256000_backward.py"
# the programs of selftest.py
for f in bench/gpu/selftest/*.tir; do
  name=selftest_$(basename "$f" .tir)
  pipeline=()
  if [ "$name" = selftest_resident ]; then
    # resident splits are not the default
    pipeline=(--pass-pipeline='canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{resident=true,split-rows-below=1},sram-alloc')
  fi
  "$tfc" "${pipeline[@]}" --emit=triton --target=h200 "$f" -o "$out/$name.py"
  check "$out/$name.py"
  echo "$out/$name.py"
done

# workload (as run.py names it), file, extent of its '?' dimension (and
# "resident" for the resident split's pipeline)
shapes="
add_rmsnorm_4096x8192 add_rmsnorm_8192 4096
add_rmsnorm_16384x8192 add_rmsnorm_8192 16384
add_rmsnorm_4096x5120 add_rmsnorm_5120 4096
add_rmsnorm_4096x14336 add_rmsnorm_14336 4096
rms_silu_mul_4096x8192 rms_silu_mul_8192 4096
rms_silu_mul_16384x8192 rms_silu_mul_8192 16384
rms_silu_mul_4096x5120 rms_silu_mul_5120 4096
rms_silu_mul_4096x14336 rms_silu_mul_14336 4096
swiglu_4096x28672 swiglu_28672 4096
softmax_32768x4096 softmax_4096 32768
logsumexp_32768x4096 logsumexp_4096 32768
logaddexp_64M logaddexp 67108864
quantize_64M quantize 67108864
"
for d in 32000 256000; do
  for op in softmax logsumexp; do
    shapes="$shapes
${op}_4096x$d ${op}_$d 4096"
    for t in 1 4 16; do
      shapes="$shapes
decode_${op}_${t}x$d ${op}_$d $t"
    done
  done
done
shapes="$shapes
softmax_resident_4096x256000 softmax_256000 4096 resident
cross_entropy_4096x151936 cross_entropy_151936 4096
decode_cross_entropy_1x151936 cross_entropy_151936 1
decode_cross_entropy_16x151936 cross_entropy_151936 16
rope_4096 rope_4096 1
decode_rope_32 rope_32 1
decode_gqa_scores_32x2048 gqa_scores 1
k_norm_4096 k_norm 4096
decode_k_norm_32 k_norm 32
channel_scale_4096x4096 channel_scale 1"
for t in 1 32; do
  for d in 8192 5120 14336; do
    shapes="$shapes
decode_add_rmsnorm_${t}x$d add_rmsnorm_$d $t
decode_rms_silu_mul_${t}x$d rms_silu_mul_$d $t"
  done
done

{
  echo "{"
  sep=""
  while read -r name file extent pipe; do
    [ -n "$name" ] || continue
    args=()
    if [ "$pipe" = resident ]; then
      args=(--pass-pipeline="$(printf "$resident" "")")
    fi
    bytes=$("$tfc" memory-traffic "bench/gpu/workloads/$file.tir" --target=h200 --dynamic-extent="$extent" "${args[@]}" |
      sed -n 's/^total: [0-9]* B before fusion, \([0-9]*\) B after.*/\1/p')
    [ -n "$bytes" ] || { echo "build.sh: no prediction for $name" >&2; exit 1; }
    printf '%s  "%s": %s' "$sep" "$name" "$bytes"
    sep=$',\n'
  done <<<"$shapes"
  printf '\n}\n'
} >"$out/predicted.json"
echo "$out/predicted.json"
