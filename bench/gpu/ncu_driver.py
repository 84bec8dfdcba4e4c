#!/usr/bin/env python3
"""Helper of ncu.sh.

    python3 bench/gpu/ncu_driver.py NAME          one profiled call of a workload
    python3 bench/gpu/ncu_driver.py --report DIR NAME...

The first form builds the workload's inputs as run.py does, calls our
function once to compile and warm it, then calls it once more between
cudaProfilerStart and cudaProfilerStop: under `ncu --profile-from-start off`
only that call's kernels are profiled. The second reads the CSV files ncu
wrote to DIR/NAME.csv and prints the DRAM bytes measured beside those
predicted (bench/gpu/out/predicted.json), also writing $OUT/ncu.json.
"""
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def profile(name):
    import torch
    sys.path.insert(0, HERE)
    import run
    ws = [w for w in run.WORKLOADS if w.name == name]
    if not ws:
        sys.exit(f"ncu_driver.py: no workload {name}")
    w = ws[0]
    torch.manual_seed(0)
    fn = getattr(run.load(w.module), w.func)
    inputs = w.make()
    fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def number(s):
    return float(s.replace(",", ""))


def report(directory, names):
    with open(os.path.join(HERE, "out", "predicted.json")) as f:
        predicted = json.load(f)
    rows = []
    print(f"{'workload':26s} {'kernels':>7s} {'read MB':>10s} {'write MB':>10s} {'total MB':>10s} {'predicted MB':>12s} {'measured/predicted':>18s}")
    for name in names:
        path = os.path.join(directory, name + ".csv")
        kernels = {}
        try:
            with open(path) as f:
                lines = [ln for ln in f if ln.startswith('"')]
            for rec in csv.DictReader(lines):
                k = kernels.setdefault(rec["ID"], {"kernel": rec["Kernel Name"], "read": 0.0, "write": 0.0})
                if rec["Metric Name"] == "dram__bytes_read.sum":
                    k["read"] = number(rec["Metric Value"])
                elif rec["Metric Name"] == "dram__bytes_write.sum":
                    k["write"] = number(rec["Metric Value"])
        except (OSError, KeyError, ValueError) as e:
            print(f"{name:26s} no measurement ({type(e).__name__}: {e})")
            rows.append({"name": name, "error": str(e)})
            continue
        read = sum(k["read"] for k in kernels.values())
        write = sum(k["write"] for k in kernels.values())
        pred = predicted.get(name)
        ratio = (read + write) / pred if pred else float("nan")
        print(f"{name:26s} {len(kernels):7d} {read / 1e6:10.1f} {write / 1e6:10.1f} {(read + write) / 1e6:10.1f} "
              f"{(pred or 0) / 1e6:12.1f} {ratio:18.3f}")
        rows.append({"name": name, "kernels": list(kernels.values()), "read_bytes": read, "write_bytes": write,
                     "predicted_bytes": pred, "measured_over_predicted": ratio})
    out = os.environ.get("OUT") or os.path.join(HERE, "out")
    with open(os.path.join(out, "ncu.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--report":
        report(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 2:
        profile(sys.argv[1])
    else:
        sys.exit(__doc__)
