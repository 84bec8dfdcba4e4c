# Loads TensorForge shared libraries with ctypes (standard library only) and
# calls their entry points, printing the results for FileCheck.
#   call_so.py LIB_A LIB_B
# LIB_A is so-library.tir built with --emit=so, LIB_B the same at -O0.
import ctypes
import struct
import sys

a = ctypes.CDLL(sys.argv[1])
b = ctypes.CDLL(sys.argv[2])
for lib in (a, b):
    lib.tf_set_num_threads.argtypes = [ctypes.c_int]
    lib.tf_num_threads.restype = ctypes.c_int


def entry(lib, name, buffers, extents):
    fn = getattr(lib, "tf_entry_" + name)
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)]
    bufs = (ctypes.c_void_p * len(buffers))(*[ctypes.cast(x, ctypes.c_void_p) for x in buffers])
    exts = (ctypes.c_int64 * max(1, len(extents)))(*extents)
    fn(bufs, exts)


def bf16(x):
    """The bits of float x rounded to bf16 (nearest even)."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return (u + 0x7FFF + ((u >> 16) & 1)) >> 16


def from_bf16(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def show(label, values):
    print(label, " ".join("%g" % v for v in values))


# scale: f32, a `?` row dimension, two results
rows = 3
x = (ctypes.c_float * (rows * 4))(*[i - 5.5 for i in range(rows * 4)])
w = (ctypes.c_float * 4)(1, 2, 3, 4)
y = (ctypes.c_float * (rows * 4))()
r = (ctypes.c_float * (rows * 4))()
a.tf_set_num_threads(2)
print("threads", a.tf_num_threads())
entry(a, "scale", [x, w, y, r], [rows, rows, rows])
show("scale y", y)
show("scale relu", r)

# the same function of the other library, one thread
b.tf_set_num_threads(1)
print("threads", b.tf_num_threads(), a.tf_num_threads())
y2 = (ctypes.c_float * (rows * 4))()
r2 = (ctypes.c_float * (rows * 4))()
entry(b, "scale", [x, w, y2, r2], [rows, rows, rows])
print("same", list(y2) == list(y) and list(r2) == list(r))

# bf16 (uint16 bits), a second function of the library
h = (ctypes.c_uint16 * 8)(*[bf16(v) for v in (-2, -1, -0.5, 0, 0.5, 1, 2, 3)])
o = (ctypes.c_uint16 * 8)()
entry(a, "halve", [h, o], [])
show("halve", [from_bf16(v) for v in o])
# the direct function, with the host convention
a.halve.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
o2 = (ctypes.c_uint16 * 8)()
a.halve(h, o2)
print("direct", list(o2) == list(o))
