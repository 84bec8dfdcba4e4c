#!/usr/bin/env python3
"""A long-row softmax held in a thread-block cluster's shared memory, loaded by bulk copies (an experiment).

    python3 bench/gpu/bulk_softmax.py [--rows 4096] [--cols 256000] [--forms 8/256,8/512,4/512,16/256,8/512/bulkstore]
                                      [--dump DIR] [--tfc NAME=FILE.py,...]

A row of 256000 bf16 logits (512 KB) fits no one CTA's shared memory, and
read twice it moves 3 bytes for every 2 a copy moves. Here a row is a
cluster of S CTAs, each holding a split of cols/S logits in its dynamic
shared memory:

  1. thread 0 arms an mbarrier with the split's bytes and issues
     `cp.async.bulk` copies (the TMA unit's one-dimensional form, no tensor
     map) of the split from global to shared memory: the whole split is in
     flight at once, not limited by registers;
  2. the threads wait on the mbarrier, then take the split's max and its sum
     of exp(x - max) from shared memory (two passes over shared memory, each
     reduced over warps with shfl and over the CTA through shared memory);
  3. thread 0 stores the pair into slot `rank` of every CTA of the cluster
     (`mapa` + `st.shared::cluster`), and `barrier.cluster` (release,
     acquire) orders those stores before anyone reads them;
  4. every thread combines the S pairs into the row's max M and sum, then
     writes exp(x - M) / sum as bf16 from shared memory to global memory
     (16-byte stores; with `bulkstore`, back into shared memory and out by
     `cp.async.bulk` stores).

Forms: S/threads[/bulkstore]. S = 16 is a non-portable cluster size
(cuFuncSetAttribute). Each form is checked against torch.softmax in f32 and
timed with do_bench beside a copy of the same bytes, Triton's module of tfc
(bench/gpu/out/softmax_256000.py) and torch.softmax (resident_variants.time_forms).
--dump writes each form's PTX. --tfc adds modules tfc built (FILE.py: a
launcher defining softmax, e.g. a resident split in PTX, which copies its
split into shared memory by bulk copies as these forms do, emit/ptx/bulk.go)
to the timing and to the extreme rows.
"""
import argparse
import ctypes
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LOG2E = 1.4426950408889634


def f32hex(v):
    import struct
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", v))[0]


def ptx_source(cols, S, T, pieces=4, bulkstore=False):
    """The PTX of one form: rows of cols bf16 in clusters of S CTAs of T threads."""
    assert cols % S == 0, "cols must divide into S splits"
    C = cols // S
    CB = 2 * C
    assert CB % 16 == 0, "a split must be a whole number of 16-byte vectors"
    NV = CB // 16
    W = T // 32
    # shared memory: the split, then the S (max, sum) pairs, the per-warp
    # partials (max, then sum), the mbarrier
    PB = (CB + 15) // 16 * 16
    RB = PB + 8 * S
    SB = RB + 4 * W
    MB = (SB + 4 * W + 7) // 8 * 8
    SMEM = MB + 8
    # the bulk copies: pieces of a multiple of 16 bytes
    step = (CB // pieces + 15) // 16 * 16
    copies = []
    off = 0
    while off < CB:
        n = min(step, CB - off)
        copies.append((off, n))
        off += n
    def bulk_copies(gbase, instr):
        # instr over each piece: %r7 its shared address, %rd7 its global one (from gbase), %r8 its bytes
        for off, n in copies:
            a("\tadd.u32 %r7, %r4, {};\n\tadd.u64 %rd7, {}, {};\n\tmov.u32 %r8, {};".format(off, gbase, off, n))
            a("\t" + instr)

    L = f32hex(LOG2E)
    NINF = "0fFF800000"
    p = []
    a = p.append
    a(".version 8.0\n.target sm_90\n.address_size 64\n")
    a(".extern .shared .align 128 .b8 smem[];\n")
    a(".visible .entry bulk_softmax(.param .u64 px, .param .u64 py)")
    a(".reqntid %d, 1, 1\n.reqnctapercluster %d, 1, 1\n{" % (T, S))
    a("\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<32>;\n\t.reg .f32 %f<64>;")
    a("\tld.param.u64 %rd1, [px];\n\tld.param.u64 %rd2, [py];")
    a("\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd2, %rd2;")
    a("\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %cluster_ctarank;")
    a("\tmov.u32 %r4, smem;")  # the split's shared address
    a("\tadd.u32 %r5, %r4, {};".format(MB))  # the mbarrier
    # the split's global offset: ctaid * CB (a cluster's CTAs are consecutive)
    a("\tmul.wide.u32 %rd3, %r2, {};".format(CB))
    a("\tadd.u64 %rd4, %rd1, %rd3;\n\tadd.u64 %rd5, %rd2, %rd3;")
    # every CTA of the cluster has started before any remote store (arrive now, wait before the stores)
    a("\tbarrier.cluster.arrive.relaxed.aligned;")
    a("\tsetp.eq.u32 %p1, %r1, 0;")
    a("\t@!%p1 bra $Larmed;")
    a("\tmbarrier.init.shared::cta.b64 [%r5], 1;")
    a("\tfence.mbarrier_init.release.cluster;")
    a("\tfence.proxy.async.shared::cta;")
    a("\tmov.u32 %r6, {};".format(CB))
    a("\tmbarrier.arrive.expect_tx.shared::cta.b64 %rd6, [%r5], %r6;")
    bulk_copies("%rd4", "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r7], [%rd7], %r8, [%r5];")
    a("$Larmed:")
    a("\tbar.sync 0;")
    a("$Lwait:")
    a("\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;")
    a("\t@!%p2 bra $Lwait;")

    def vec_loop(label, body):
        # for v = tid; v < NV; v += T: the 16-byte vector at smem + 16 v in %r20..%r23
        a("\tmov.u32 %r10, %r1;")
        a("$L{}:".format(label))
        a("\tsetp.ge.u32 %p3, %r10, {};".format(NV))
        a("\t@%p3 bra $L{}_end;".format(label))
        a("\tshl.b32 %r11, %r10, 4;\n\tadd.u32 %r12, %r4, %r11;")
        a("\tld.shared.v4.b32 {%r20, %r21, %r22, %r23}, [%r12];")
        body()
        a("\tadd.u32 %r10, %r10, {};".format(T))
        a("\tbra $L{};".format(label))
        a("$L{}_end:".format(label))

    def unpack():
        # %f20..%f27: the 8 logits of the vector as f32
        for i in range(4):
            a("\tshl.b32 %r{}, %r{}, 16;".format(24 + 2 * i, 20 + i))
            a("\tand.b32 %r{}, %r{}, -65536;".format(25 + 2 * i, 20 + i))
        for i in range(8):
            a("\tmov.b32 %f{}, %r{};".format(20 + i, 24 + i))

    def cta_reduce(op, reg, base):
        # reg over the warp by shfl, the warps through shared memory at base; every thread gets the result
        for d in (16, 8, 4, 2, 1):
            a("\tshfl.sync.bfly.b32 %f40, {}, {}, 31, -1;".format(reg, d))
            a("\t{} {}, {}, %f40;".format(op, reg, reg))
        a("\tshr.u32 %r13, %r1, 5;\n\tand.b32 %r14, %r1, 31;\n\tsetp.eq.u32 %p4, %r14, 0;")
        a("\tshl.b32 %r15, %r13, 2;\n\tadd.u32 %r15, %r15, %r4;")
        a("\t@%p4 st.shared.f32 [%r15+{}], {};".format(base, reg))
        a("\tbar.sync 0;")
        a("\tld.shared.f32 {}, [%r4+{}];".format(reg, base))
        for w in range(1, W):
            a("\tld.shared.f32 %f41, [%r4+{}];".format(base + 4 * w))
            a("\t{} {}, {}, %f41;".format(op, reg, reg))

    # pass 1: the split's max
    a("\tmov.f32 %f1, {};".format(NINF))

    def body_max():
        unpack()
        for i in range(8):
            a("\tmax.NaN.f32 %f1, %f1, %f{};".format(20 + i))
    vec_loop("max", body_max)
    cta_reduce("max.NaN.f32", "%f1", RB)
    # pass 2: the split's sum of exp(x - max), the shift 0 for a split of -inf only
    a("\tsetp.eq.f32 %p5, %f1, {};".format(NINF))
    a("\tselp.f32 %f2, 0f00000000, %f1, %p5;")
    a("\tmul.f32 %f3, %f2, {};\n\tneg.f32 %f3, %f3;".format(L))
    a("\tmov.f32 %f4, 0f00000000;")

    def body_sum():
        unpack()
        for i in range(8):
            a("\tfma.rn.f32 %f{}, %f{}, {}, %f3;".format(30 + i, 20 + i, L))
            a("\tex2.approx.ftz.f32 %f{}, %f{};".format(30 + i, 30 + i))
        for i in range(8):
            a("\tadd.f32 %f4, %f4, %f{};".format(30 + i))
    vec_loop("sum", body_sum)
    cta_reduce("add.f32", "%f4", SB)
    # the pair into slot rank of every CTA of the cluster
    a("\tbarrier.cluster.wait.aligned;")
    a("\t@!%p1 bra $Lsent;")
    a("\tshl.b32 %r16, %r3, 3;\n\tadd.u32 %r16, %r16, %r4;\n\tadd.u32 %r16, %r16, {};".format(PB))
    for j in range(S):
        a("\tmapa.shared::cluster.u32 %r17, %r16, {};".format(j))
        a("\tst.shared::cluster.v2.f32 [%r17], {%f1, %f4};")
    a("$Lsent:")
    a("\tbarrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;")
    # the row's max M (%f5) and sum (%f6)
    a("\tmov.f32 %f5, {};".format(NINF))
    for j in range(S):
        a("\tld.shared.f32 %f7, [%r4+{}];".format(PB + 8 * j))
        a("\tmax.NaN.f32 %f5, %f5, %f7;")
    a("\tmov.f32 %f6, 0f00000000;")
    for j in range(S):
        a("\tld.shared.v2.f32 {%f7, %f8}, [%r4+" + str(PB + 8 * j) + "];")
        a("\tsub.f32 %f9, %f7, %f5;\n\tmul.f32 %f9, %f9, {};\n\tex2.approx.ftz.f32 %f9, %f9;".format(L))
        a("\tmul.f32 %f9, %f9, %f8;")
        a("\tsetp.eq.f32 %p6, %f7, {};".format(NINF))
        a("\tselp.f32 %f9, 0f00000000, %f9, %p6;")
        a("\tadd.f32 %f6, %f6, %f9;")
    a("\trcp.rn.f32 %f10, %f6;")
    a("\tmul.f32 %f11, %f5, {};\n\tneg.f32 %f11, %f11;".format(L))

    # pass 3: exp(x - M) / sum as bf16
    def body_out():
        unpack()
        for i in range(8):
            a("\tfma.rn.f32 %f{}, %f{}, {}, %f11;".format(30 + i, 20 + i, L))
            a("\tex2.approx.ftz.f32 %f{}, %f{};".format(30 + i, 30 + i))
            a("\tmul.f32 %f{}, %f{}, %f10;".format(30 + i, 30 + i))
        for i in range(4):
            a("\tcvt.rn.bf16x2.f32 %r{}, %f{}, %f{};".format(30 + i, 31 + 2 * i, 30 + 2 * i))
        if bulkstore:
            a("\tst.shared.v4.b32 [%r12], {%r30, %r31, %r32, %r33};")
        else:
            a("\tcvt.u64.u32 %rd8, %r11;\n\tadd.u64 %rd9, %rd5, %rd8;")
            a("\tst.global.v4.b32 [%rd9], {%r30, %r31, %r32, %r33};")
    vec_loop("out", body_out)
    if bulkstore:
        a("\tfence.proxy.async.shared::cta;")
        a("\tbar.sync 0;")
        a("\t@!%p1 bra $Ldone;")
        bulk_copies("%rd5", "cp.async.bulk.global.shared::cta.bulk_group [%rd7], [%r7], %r8;")
        a("\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;")
        a("$Ldone:")
    a("\tret;\n}\n")
    return "\n".join(p), SMEM


_lib = None


def libcuda():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        p, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        pp = ctypes.POINTER(ctypes.c_void_p)
        lib.cuGetErrorName.argtypes = [i, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuModuleLoadDataEx.argtypes = [pp, ctypes.c_char_p, u, ctypes.POINTER(i), pp]
        lib.cuModuleGetFunction.argtypes = [pp, p, ctypes.c_char_p]
        lib.cuFuncSetAttribute.argtypes = [p, i, i]
        lib.cuLaunchKernel.argtypes = [p, u, u, u, u, u, u, u, p, pp, pp]
        _lib = lib
    return _lib


def check(res, what):
    if res != 0:
        name = ctypes.c_char_p()
        libcuda().cuGetErrorName(res, ctypes.byref(name))
        raise RuntimeError("%s failed: %s" % (what, (name.value or b"?").decode()))


def load_form(src, smem, S):
    """The kernel of src, loaded into the current context."""
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context, current
    lib = libcuda()
    mod = ctypes.c_void_p()
    log = ctypes.create_string_buffer(16384)
    opts = (ctypes.c_int * 2)(5, 6)
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
    res = lib.cuModuleLoadDataEx(ctypes.byref(mod), src.encode() + b"\0", 2, opts, vals)
    if res != 0:
        check(res, "cuModuleLoadDataEx: " + log.value.decode(errors="replace"))
    fn = ctypes.c_void_p()
    check(lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"bulk_softmax"), "cuModuleGetFunction")
    check(lib.cuFuncSetAttribute(fn, 8, smem), "max dynamic shared memory")
    if S > 8:
        check(lib.cuFuncSetAttribute(fn, 14, 1), "non-portable cluster size")
    return fn


def runner(x, S, T, bulkstore):
    rows, cols = x.shape
    src, smem = ptx_source(cols, S, T, bulkstore=bulkstore)
    fn = load_form(src, smem, S)
    y = torch.empty_like(x)
    px, py = ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr())
    args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(px), ctypes.c_void_p),
                                 ctypes.cast(ctypes.byref(py), ctypes.c_void_p))
    lib = libcuda()

    def run():
        # px and py must outlive every launch: args holds their addresses
        assert px.value == x.data_ptr() and py.value == y.data_ptr()
        stream = torch.cuda.current_stream().cuda_stream
        check(lib.cuLaunchKernel(fn, rows * S, 1, 1, T, 1, 1, smem, ctypes.c_void_p(stream), args, None),
              "cuLaunchKernel")
        return y
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=256000)
    ap.add_argument("--forms", default="8/256,8/512,4/512,4/1024,16/256,8/512/bulkstore")
    ap.add_argument("--dump", default="")
    ap.add_argument("--tfc", default="", help="NAME=FILE,...: tfc modules (FILE.py defining softmax) timed and "
                    "checked beside the forms, e.g. ptx8=.bin/b8/softmax.py")
    a = ap.parse_args()
    modules = []
    for item in filter(None, a.tfc.split(",")):
        name, path = item.split("=", 1)
        spec = importlib.util.spec_from_file_location("tfc_" + name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        modules.append((name, mod.softmax))
    forms = []
    for f in a.forms.split(","):
        parts = f.split("/")
        forms.append((f, int(parts[0]), int(parts[1]), "bulkstore" in parts[2:]))
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        for name, S, T, bs in forms:
            src, smem = ptx_source(a.cols, S, T, bulkstore=bs)
            with open(os.path.join(a.dump, name.replace("/", "-") + ".ptx"), "w") as f:
                f.write(src)
            print(name, "shared bytes", smem)
        if not torch.cuda.is_available():
            return

    from resident_variants import time_forms  # this folder: the timing and the check

    def make(x):
        out = []
        tfc = os.path.join(HERE, "out", "softmax_256000.py")
        if x.shape[1] == 256000 and os.path.exists(tfc):
            spec = importlib.util.spec_from_file_location("tfc_softmax", tfc)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            out.append(("tfc triton", lambda: mod.softmax(x)))
        out.append(("torch.softmax", lambda: torch.softmax(x, -1)))
        for name, fn in modules:
            out.append((name, lambda fn=fn: fn(x)))
        for name, S, T, bs in forms:
            try:
                out.append((name, runner(x, S, T, bs)))
            except Exception as e:  # a form that fails to load is a finding
                print(f"{name} failed to load: {type(e).__name__}: {str(e)[:600]}", flush=True)
        return out
    time_forms(a.rows, a.cols, make)
    # extreme rows: -inf splits, a +inf, a NaN, huge magnitudes
    x = torch.randn(8, a.cols, device="cuda").to(torch.bfloat16)
    x[0, : a.cols // 2] = float("-inf")
    x[1, 5] = float("inf")
    x[2, 7] = float("nan")
    x[3] *= 3e38 / 4
    x[4] = float("-inf")
    x[5] -= 1e4
    ref = torch.softmax(x.float(), -1)
    runs = [(name, lambda fn=fn: fn(x)) for name, fn in modules]
    runs += [(name, lambda S=S, T=T, bs=bs: runner(x, S, T, bs)()) for name, S, T, bs in forms]
    for name, run in runs:
        try:
            got = run().float()
            torch.cuda.synchronize()
            same_nan = bool((got.isnan() == ref.isnan()).all())
            d = (got - ref).abs().nan_to_num(0).max().item()
            print(f"extreme rows {name:24s} max err {d:.2e}  NaN pattern same: {same_nan}", flush=True)
        except Exception as e:
            print(f"extreme rows {name:24s} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    main()
