# Writes a NumPy .npy file without NumPy: mknpy.py PATH DTYPE SHAPE VALUE...
#   DTYPE: f4 (float32), f8 (float64), f2 (float16), i4 (int32), i8 (int64),
#          u1 (uint8), u2 (uint16), b1 (bool)
#   SHAPE: 2x4, or 'scalar'
# Values may be nan, inf, -inf.
import struct
import sys

path, dtype, shape = sys.argv[1], sys.argv[2], sys.argv[3]
values = [float(v) for v in sys.argv[4:]]
dims = () if shape == "scalar" else tuple(int(d) for d in shape.split("x"))
fmt = {"f4": "f", "f8": "d", "f2": "e", "i4": "i", "i8": "q", "u1": "B", "u2": "H", "b1": "?"}[dtype]
if fmt in "iqBH?":
    values = [int(v) for v in values]
shape_text = "(%s)" % "".join("%d, " % d for d in dims) if len(dims) != 1 else "(%d,)" % dims[0]
header = "{'descr': '%s%s', 'fortran_order': False, 'shape': %s, }" % ("|" if dtype[1] == "1" else "<", dtype, shape_text)
pad = 64 - (10 + len(header) + 1) % 64
header = header + " " * pad + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
    f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
