#!/usr/bin/env python3
"""A resident split whose group is a thread-block cluster (an experiment).

    python3 bench/gpu/cluster_resident.py DIR[:S] ...

Times the softmax(s) of each DIR/softmax.py (a tfc module of
bench/gpu/workloads/softmax_256000.tir: PTX or Triton) beside a copy of the
same bytes, 4096 rows of 256000 bf16, with the error against torch.softmax
in f32. Built where Go is, e.g. (PIPE the -O2 pipeline with
lower-to-loops{resident=true,resident-bytes=N}):

    tfc --emit=ptx --target=h200 --pass-pipeline=PIPE -o .bin/cl8 W.tir     # N = 131072: S = 8, clusters
    tfc --emit=ptx --target=h200 --pass-pipeline=PIPE -o .bin/res16 W.tir   # N = 65536: S = 16, counters
    tfc --emit=triton --target=h200 --pass-pipeline=PIPE -o .bin/tri8/softmax.py W.tir

tfc makes a group of at most 8 a cluster itself (emit/ptx/sync.go). DIR:S
also times a copy of DIR's PTX whose resident kernel (softmax_k3) is
rewritten here into clusters of S, for sizes tfc leaves on counters (S = 16,
a non-portable size, allowed with cuFuncSetAttribute):

  - `.reqnctapercluster S, 1, 1`;
  - the instance is the CTA's place in the grid, not a loop.ticket;
  - loop.group_sync is `barrier.cluster.arrive.release` and
    `barrier.cluster.wait.acquire` instead of the atomic counters.
"""
import importlib.util
import os
import re
import shutil
import sys
import tempfile

from resident_variants import time_forms  # this folder: the timing and the check


def clusterize(ptx, s):
    """The PTX with softmax_k3 a cluster of s CTAs per row."""
    start = ptx.index(".visible .entry softmax_k3(")
    head, k = ptx[:start], ptx[start:]
    k = k.replace(".reqntid", ".reqnctapercluster %d, 1, 1\n.reqntid" % s, 1)
    # the ticket: the instance is the round's grid index (%rd31, one
    # instance per CTA)
    k, n = re.subn(r"\t// loop\.ticket:.*?ld\.shared\.b32 \t(%r\d+), \[%rd\d+\+\d+\];\n",
                   lambda m: "\t// the instance: the CTA's place in the grid\n\tcvt.u32.u64 \t%s, %%rd31;\n" % m.group(1),
                   k, count=1, flags=re.S)
    assert n == 1, "no loop.ticket in softmax_k3"
    # the group sync: a cluster barrier
    k, n = re.subn(r"\t// loop\.group_sync:.*?\$L_softmax_k3_2:\n\t// the group's stores are visible to every thread of the CTA\n\tbar\.sync \t0;\n",
                   "\t// the row's CTAs: a cluster barrier (release, acquire)\n"
                   "\tbarrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n",
                   k, count=1, flags=re.S)
    assert n == 1, "no loop.group_sync in softmax_k3"
    # the departure counters are not used
    k, n = re.subn(r"\t// loop\.group_sync's departure:.*?st\.global\.b32 \t\[%rd\d+\+4\], 0;\n", "", k, count=1, flags=re.S)
    assert n == 1, "no departure in softmax_k3"
    return head + k


def load(folder, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "softmax.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    def forms(x):
        out = []
        for i, arg in enumerate(sys.argv[1:]):
            folder, _, s = arg.partition(":")
            mod = load(folder, "tfc%d" % i)
            out.append(("tfc %s" % os.path.basename(folder.rstrip("/")), lambda mod=mod: mod.softmax(x)))
            if not s:
                continue
            tmp = tempfile.mkdtemp()
            shutil.copy(os.path.join(folder, "softmax.py"), tmp)
            with open(os.path.join(folder, "softmax.ptx")) as f:
                ptx = clusterize(f.read(), int(s))
            with open(os.path.join(tmp, "softmax.ptx"), "w") as f:
                f.write(ptx)
            mod = load(tmp, "cluster%d" % i)
            if int(s) > 8:
                orig = mod._functions

                def functions(device, orig=orig, mod=mod):
                    fns = orig(device)
                    # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
                    mod._check(mod._libcuda().cuFuncSetAttribute(fns["softmax_k3"], 14, 1), "non-portable cluster")
                    return fns
                mod._functions = functions
            out.append(("cluster of %s, %s" % (s, os.path.basename(folder.rstrip("/"))), lambda mod=mod: mod.softmax(x)))
        return out
    time_forms(4096, 256000, forms, width=40)


if __name__ == "__main__":
    main()
