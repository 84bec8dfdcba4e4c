# Writes a NumPy .npz archive without NumPy: mknpz.py OUT [--deflate] NAME=FILE.npy ...
# Members are stored uncompressed (as numpy.savez does) unless --deflate
# (numpy.savez_compressed).
import sys
import zipfile

out, rest = sys.argv[1], sys.argv[2:]
method = zipfile.ZIP_STORED
if rest and rest[0] == "--deflate":
    method, rest = zipfile.ZIP_DEFLATED, rest[1:]
with zipfile.ZipFile(out, "w", method) as z:
    for spec in rest:
        name, path = spec.split("=", 1)
        z.write(path, name + ".npy")
