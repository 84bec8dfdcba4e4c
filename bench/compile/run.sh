#!/usr/bin/env bash
# Compile time of -O2 (through lower-to-loops) on generated chains,
# fan-outs and many-result functions of 10k, 100k and 1M ops, as ops/s,
# and the time of the 200k-op chain. The machines are shared: compare
# ratios between sizes, not absolutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./bench/compile -run XXX -bench . -benchtime 1x -timeout 60m | tee /tmp/compile-bench.txt
awk '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
       for (i = 1; i <= NF; i++) { if ($(i+1) == "ops/s") r[name] = $i; if ($(i+1) == "s/compile") c = $i } }
  END { printf "%-8s %14s %14s %14s\n", "shape", "10k ops/s", "100k ops/s", "1M ops/s"
        n = split("chain fanout results", s, " ")
        for (i = 1; i <= n; i++)
          printf "%-8s %14.0f %14.0f %14.0f\n", s[i], r["BenchmarkO2/" s[i] "/10k"], r["BenchmarkO2/" s[i] "/100k"], r["BenchmarkO2/" s[i] "/1M"]
        printf "200k-op chain through -O2: %.2f s\n", c }' /tmp/compile-bench.txt
