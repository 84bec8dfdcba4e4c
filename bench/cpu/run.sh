#!/usr/bin/env bash
# Fused row kernels (-O2) against the same programs at -O0 and against a
# copy of the same bytes, all compiled by tfc and LLVM and run on every
# core, in one run. Shape: TFC_BENCH_ROWS x TFC_BENCH_COLS (default
# 4096x8192); TF_NUM_THREADS limits the threads.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./bench/cpu -run XXX -bench . -benchtime 1x -timeout 60m | tee /tmp/cpu-bench.txt
