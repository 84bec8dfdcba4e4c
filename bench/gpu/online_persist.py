#!/usr/bin/env python3
"""Persistent variants of an online row kernel's Triton module, for timing.

    python3 bench/gpu/online_persist.py IN.py OUT.py KERNEL PROGRAMS_PER_SM WARPS

Rewrites KERNEL (one program per row: pid = tl.program_id(0); r = pid...)
into a program that loops over every n-th row, n = PROGRAMS_PER_SM times
the multiprocessors, and its launch into that many programs, with WARPS
warps. Fewer rows in flight keep more of each row in L2 between the
kernel's two passes over it (the second pass walks the row backwards).
A measurement aid: bench/session.sh vocab writes these forms on the GPU machine; tfc emits the unrewritten one.
"""
import re
import sys


def main():
    src, dst, kern, per, warps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    text = open(src).read()
    m = re.search(r"(@triton\.jit\ndef %s\(.*?\n)(.*?)(?=\n\n\n)" % re.escape(kern), text, re.S)
    if not m:
        sys.exit(f"{src}: no kernel {kern}")
    body = m.group(2).split("\n")
    head = "    pid = tl.program_id(0)"
    i = body.index(head)
    if not body[i + 1].startswith("    r = pid.to(tl.int64)"):
        sys.exit(f"{kern}: not a program per row")
    rows = re.search(r"def %s\(([^,]+), [^)]*?(\w+_d0)," % re.escape(kern), m.group(1)).group(2)
    new = body[:i + 1] + [f"    for rr in range(pid, {rows}, tl.num_programs(0)):",
                          "        r = rr.to(tl.int64)"]
    new += ["    " + ln if ln.strip() else ln for ln in body[i + 2:]]
    text = text[:m.start(2)] + "\n".join(new) + text[m.end(2):]
    # the launch: at most per programs per multiprocessor
    launch = re.compile(r"(cfg = CONFIGS\[\"%s\"\]\n\s+grid = \()([^,]+)(,\))" % re.escape(kern))
    if not launch.search(text):
        sys.exit(f"{kern}: launch not found")
    text = launch.sub(lambda g: g.group(1) + f"min({g.group(2)}, {per} * torch.cuda.get_device_properties(dev).multi_processor_count)" + g.group(3), text)
    text = re.sub(r'("%s": \{[^}]*"num_warps": )\d+' % re.escape(kern), lambda g: g.group(1) + str(warps), text)
    open(dst, "w").write(text)


if __name__ == "__main__":
    main()
