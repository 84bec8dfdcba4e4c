#!/usr/bin/env bash
# Builds, where Go is, the modules that decide the resident split's bulk-copy
# form (docs/ptx.md, "Bulk copies") into DIR (default .bin/bulk, ignored by
# git: name it in the device call's carry), then, on the GPU machine:
#
#   bash bench/gpu/bulk_resident.sh [DIR]
#
# Softmax over bf16 rows of 256000 and 32000 (bench/gpu/workloads), PTX:
#   b8        lower-to-loops{resident=true,resident-bytes=131072}: clusters of 8
#             splits of 32000, bulk copies, the exchange in distributed shared memory
#   b8t512    the same, at most 512 threads per CTA (the emitter's bound for
#             kernels with bulk copies is 256, emit/ptx/plan.go's bulkThreads)
#   b8t256    the same, at most 256 threads (the default)
#   b8l2      the same, the partials exchanged through L2
#   b16       resident-bytes=65536: groups of 16 splits of 16000, on counters
#   c1, c1t256  rows of 32000 copied whole (a split of one), at most 256 threads
#   o256, o32 the default -O2 forms (online; one-pass)
# and Triton: t32 (resident, the default bytes: 32 splits of 8000), to256 (-O2).
# Every split in the modules runs at every row count (split-rows-below=1).
# And add + RMSNorm, RMSNorm -> SiLU -> Mul over rows of 5120 and 8192
# (rows-def, rows-cp, rows-cp512, below).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.bin/bulk}
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=github.com/tensorforge/tensorforge/emit/ptx
CGO_ENABLED=0 go build -o "$work/tfc" ./tfc
CGO_ENABLED=0 go build -ldflags "-X $pkg.bulkThreadsSetting=512" -o "$work/tfc-t512" ./tfc
CGO_ENABLED=0 go build -ldflags "-X $pkg.bulkThreadsSetting=256" -o "$work/tfc-t256" ./tfc
CGO_ENABLED=0 go build -ldflags "-X $pkg.clusterExchangeSetting=off" -o "$work/tfc-l2" ./tfc
pipe() {
  echo "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{resident=true,resident-bytes=$1,split-rows-below=1},sram-alloc"
}
w256=bench/gpu/workloads/softmax_256000.tir
w32=bench/gpu/workloads/softmax_32000.tir
"$work/tfc" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/b8" $w256
"$work/tfc-t512" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/b8t512" $w256
"$work/tfc-t256" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/b8t256" $w256
"$work/tfc-l2" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/b8l2" $w256
"$work/tfc" --emit=ptx --target=h200 --pass-pipeline="$(pipe 65536)" -o "$out/b16" $w256
"$work/tfc" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/c1" $w32
"$work/tfc-t256" --emit=ptx --target=h200 --pass-pipeline="$(pipe 131072)" -o "$out/c1t256" $w32
"$work/tfc" --emit=ptx --target=h200 -O2 -o "$out/o256" $w256
"$work/tfc" --emit=ptx --target=h200 -O2 -o "$out/o32" $w32
mkdir -p "$out/t32" "$out/to256"
"$work/tfc" --emit=triton --target=h200 --pass-pipeline="$(pipe 32768)" -o "$out/t32/softmax.py" $w256
"$work/tfc" --emit=triton --target=h200 -O2 -o "$out/to256/softmax.py" $w256
# RMSNorm rows (bench/gpu/rows_copies.py): the default PTX (rows-def) and
# one-pass kernels copying the inputs they read twice into shared memory by
# bulk copies (lower-to-loops{row-copies=true}: rows-cp; rows-cp512 with at
# most 512 threads)
for w in add_rmsnorm_5120 add_rmsnorm_8192 rms_silu_mul_5120 rms_silu_mul_8192; do
  f=bench/gpu/workloads/$w.tir
  "$work/tfc" --emit=ptx --target=h200 -O2 -o "$out/rows-def/$w.ptx" $f
  cp="canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{row-copies=true},sram-alloc"
  "$work/tfc" --emit=ptx --target=h200 --pass-pipeline="$cp" -o "$out/rows-cp/$w.ptx" $f
  "$work/tfc-t512" --emit=ptx --target=h200 --pass-pipeline="$cp" -o "$out/rows-cp512/$w.ptx" $f
done
grep -H "^// Groups\|^// Bulk\|^// Exchange\|reqnctapercluster" "$out"/*/softmax.ptx "$out"/rows-cp/*/*.ptx
