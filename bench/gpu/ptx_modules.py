"""Makes the PTX launchers look like the Triton modules to run.py.

build.sh writes, per workload, out/<name>.py (Triton) and out/<name>.ptx/<func>.py
(the PTX launcher, same calling convention). run.py loads <modules>/<name>.py, so
this writes <dest>/<name>.py shims that load out/<name>.ptx/<func>.py:

    python3 bench/gpu/ptx_modules.py bench/gpu/out /tmp/ptxmods
    python3 bench/gpu/run.py --modules /tmp/ptxmods ...
"""
import os
import sys

SHIM = '''# PTX launcher of workload {name}, loaded in place of its Triton module.
import importlib.util as _u
_spec = _u.spec_from_file_location("tensorforge_ptx_{name}", {path!r})
_mod = _u.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
globals().update({{k: v for k, v in vars(_mod).items() if not k.startswith("__")}})
'''


def main(src, dest):
    os.makedirs(dest, exist_ok=True)
    n = 0
    for entry in sorted(os.listdir(src)):
        d = os.path.join(src, entry)
        if not (entry.endswith(".ptx") and os.path.isdir(d)):
            continue
        name = entry[: -len(".ptx")]
        launchers = sorted(f for f in os.listdir(d) if f.endswith(".py"))
        if len(launchers) != 1:
            # (a folder of several programs, such as the emitter's test
            # files decode_ab.sh assembles: no workload of run.py)
            print(f"{d}: skipped, {len(launchers)} launchers", file=sys.stderr)
            continue
        path = os.path.abspath(os.path.join(d, launchers[0]))
        with open(os.path.join(dest, name + ".py"), "w") as f:
            f.write(SHIM.format(name=name, path=path))
        n += 1
    print(f"{n} PTX modules in {dest}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
