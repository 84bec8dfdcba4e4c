#!/usr/bin/env bash
# Parse + verify + print throughput of tfc's front end beside mlir-opt-16,
# in one run (the machines are shared: compare ratios, not absolutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./bench/parse -run XXX -bench . -benchtime 3x -timeout 30m | tee /tmp/parse-bench.txt
awk '/^Benchmark/ { split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]); for (i = 1; i <= NF; i++) if ($(i+1) == "ops/s") r[a[1] "/" a[2]] = $i }
  END { printf "%-6s %16s %16s %8s\n", "ops", "tfc ops/s", "mlir-opt ops/s", "ratio";
        n = split("10k 100k 1M", s, " ");
        for (i = 1; i <= n; i++) { t = r["BenchmarkTensorForge/" s[i]]; m = r["BenchmarkMLIROpt/" s[i]];
          printf "%-6s %16.0f %16.0f %8.2f\n", s[i], t, m, (m > 0 ? t / m : 0) } }' /tmp/parse-bench.txt
