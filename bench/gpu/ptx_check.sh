#!/usr/bin/env bash
# Assembles every kernel of the PTX emitter's output with ptxas for the
# H100/H200 (sm_90) and reports what ptxas says about each:
#
#   bench/gpu/ptx_check.sh [--fail-on-spill] [PATH ...]
#
# PATH is a .ptx file or a directory searched (recursively) for *.ptx;
# the default is bench/gpu/out, where build.sh writes
# `tfc --emit=ptx -o bench/gpu/out/<workload>.ptx/` for every workload.
# For each file it runs
#
#   ptxas -arch=sm_90 -v -o /dev/null FILE
#
# (-arch=sm_90a for a module whose .target is sm_90a: the wgmma form),
# and prints one line per kernel (entry): registers per thread, the
# barriers and static shared memory ptxas counted, the stack frame and
# the bytes of spill stores and loads. A file ptxas rejects is reported
# with ptxas's messages. The exit status is 1 when ptxas rejected a file,
# or, with --fail-on-spill, when a kernel spills; 2 when there is no
# ptxas or no .ptx file; 0 otherwise. ptxas is $PTXAS, or ptxas on the
# PATH, or /usr/local/cuda/bin/ptxas.
set -uo pipefail

fail_on_spill=no
paths=()
for a in "$@"; do
  case "$a" in
    --fail-on-spill) fail_on_spill=yes ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) paths+=("$a") ;;
  esac
done
if [ ${#paths[@]} -eq 0 ]; then
  paths=("$(dirname "$0")/out")
fi

ptxas=${PTXAS:-}
if [ -z "$ptxas" ]; then
  ptxas=$(command -v ptxas || true)
fi
if [ -z "$ptxas" ] && [ -x /usr/local/cuda/bin/ptxas ]; then
  ptxas=/usr/local/cuda/bin/ptxas
fi
if [ -z "$ptxas" ]; then
  echo "ptx_check: no ptxas (set PTXAS or put CUDA's bin on the PATH)" >&2
  exit 2
fi

files=()
for p in "${paths[@]}"; do
  if [ -d "$p" ]; then
    while IFS= read -r f; do files+=("$f"); done < <(find "$p" -name '*.ptx' -type f | sort)
  elif [ -f "$p" ]; then
    files+=("$p")
  else
    echo "ptx_check: $p: no such file or directory" >&2
    exit 2
  fi
done
if [ ${#files[@]} -eq 0 ]; then
  echo "ptx_check: no .ptx file under ${paths[*]}" >&2
  exit 2
fi

echo "ptx_check: $("$ptxas" --version | tail -n 1)"
printf '%-48s %-34s %5s %4s %7s %6s %8s %8s\n' FILE KERNEL REGS BARS SMEM STACK SPILL_ST SPILL_LD
rejected=0
spilled=0
kernels=0
for f in "${files[@]}"; do
  arch=sm_90
  if grep -q '^\.target sm_90a' "$f"; then
    arch=sm_90a
  fi
  if ! out=$("$ptxas" -arch=$arch -v -o /dev/null "$f" 2>&1); then
    echo "REJECTED $f:"
    echo "$out" | sed 's/^/    /'
    rejected=$((rejected + 1))
    continue
  fi
  # warnings (wgmma serialized, ...) as ptxas gives them
  echo "$out" | grep -i 'warning' | sed "s|^|WARNING $f: |"
  # ptxas -v prints, per entry:
  #   ptxas info    : Compiling entry function 'k' for 'sm_90'
  #   ptxas info    : Function properties for k
  #       8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  #   ptxas info    : Used 64 registers, used 1 barriers, 32 bytes smem, ...
  while IFS='|' read -r name regs bars smem stack sst sld; do
    [ -z "$name" ] && continue
    kernels=$((kernels + 1))
    flag=""
    if [ "$sst" != 0 ] || [ "$sld" != 0 ]; then
      spilled=$((spilled + 1))
      flag="  SPILLS"
    fi
    printf '%-48s %-34s %5s %4s %7s %6s %8s %8s%s\n' "$f" "$name" "$regs" "$bars" "$smem" "$stack" "$sst" "$sld" "$flag"
  done < <(echo "$out" | awk '
    /Compiling entry function/ { if (name != "") print name "|" regs "|" bars "|" smem "|" stack "|" sst "|" sld
                                 split($0, q, "\047"); name = q[2]
                                 regs = "?"; bars = 0; smem = 0; stack = 0; sst = 0; sld = 0 }
    /bytes stack frame/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "bytes" && $(i+2) == "stack") stack = $i
                                                     if ($(i+2) == "spill" && $(i+3) ~ /^stores/) sst = $i
                                                     if ($(i+2) == "spill" && $(i+3) ~ /^loads/) sld = $i } }
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) { if ($i == "Used") regs = $(i+1)
                                                         if ($(i+1) ~ /^barriers/) bars = $i
                                                         if ($(i+2) ~ /^smem/) smem = $i } }
    END { if (name != "") print name "|" regs "|" bars "|" smem "|" stack "|" sst "|" sld }')
done
echo "ptx_check: ${#files[@]} file(s), $kernels kernel(s), $rejected rejected, $spilled with spills"
if [ "$rejected" -gt 0 ]; then
  exit 1
fi
if [ "$fail_on_spill" = yes ] && [ "$spilled" -gt 0 ]; then
  exit 1
fi
exit 0
