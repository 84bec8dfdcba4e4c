"""Running tfc, and the disk cache of what it built.

Every artifact lives in ``<cache>/<key>/``, where the key hashes the .tir,
the compiler's identity, the target, the emitter and the options. A warm
start finds the folder and calls tfc zero times. The compiler's identity is
read from the binary's path, size and modification time, so checking the
cache runs nothing either.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile

BUILD_HINT = (
    "tfc, the TensorForge compiler, was not found. Build it from the repository root with\n"
    "    go build -o $HOME/go/bin/tfc ./tfc      (or: go install ./tfc)\n"
    "then put it on PATH or set TENSORFORGE_TFC=/path/to/tfc."
)


class CompileError(RuntimeError):
    """tfc refused a program or failed; the message holds its diagnostics."""


def find_tfc(explicit=None):
    """The tfc binary: the option, $TENSORFORGE_TFC, $TFC_BIN, then PATH."""
    for cand in (explicit, os.environ.get("TENSORFORGE_TFC"), os.environ.get("TFC_BIN")):
        if cand:
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return os.path.abspath(cand)
            raise CompileError("tfc given as %r does not exist or is not executable.\n%s" % (cand, BUILD_HINT))
    found = shutil.which("tfc")
    if found:
        return found
    raise CompileError(BUILD_HINT)


def compiler_identity(tfc):
    st = os.stat(tfc)
    return "%s:%d:%d" % (os.path.realpath(tfc), st.st_size, st.st_mtime_ns)


def default_cache_dir():
    env = os.environ.get("TENSORFORGE_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorforge")


# How each emitter is asked for, and the artifact it leaves in the folder.
EMITTERS = {
    "triton": (["--emit=triton"], "module.py"),
    "ptx": (["--emit=ptx"], "."),
    "cpu": (["--emit=so"], "kernels.so"),
}


class Compiler:
    """Compiles .tir modules with tfc into a cache folder; counts tfc calls."""

    def __init__(self, tfc=None, cache_dir=None, extra_flags=(), tune_cache=None):
        self._tfc = tfc
        self.cache_dir = cache_dir or default_cache_dir()
        self.extra_flags = list(extra_flags)
        # a tuning cache: passed to tfc, and its contents are part of the key,
        # so a retuned cache compiles anew
        self.tune_cache = tune_cache
        self.tfc_calls = 0
        self.cache_hits = 0

    @property
    def tfc(self):
        if self._tfc is None or not os.path.isabs(self._tfc):
            self._tfc = find_tfc(self._tfc)
        return self._tfc

    def _tune_flags(self, emitter):
        return ["--tune-cache=" + self.tune_cache] if self.tune_cache and emitter == "triton" else []

    def key(self, text, target, emitter):
        h = hashlib.sha256()
        for part in (text, compiler_identity(self.tfc), target, emitter, " ".join(self.extra_flags)):
            h.update(part.encode())
            h.update(b"\0")
        if self._tune_flags(emitter):
            with open(self.tune_cache, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        return h.hexdigest()[:32]

    def build(self, text, target, emitter):
        """The folder holding the compiled module of text (compiled now if not cached)."""
        if emitter not in EMITTERS:
            raise CompileError("unknown emitter %r (known: %s)" % (emitter, ", ".join(sorted(EMITTERS))))
        folder = os.path.join(self.cache_dir, self.key(text, target, emitter))
        if os.path.isfile(os.path.join(folder, "DONE")):
            self.cache_hits += 1
            return folder
        os.makedirs(self.cache_dir, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".build-", dir=self.cache_dir)
        try:
            src = os.path.join(tmp, "module.tir")
            with open(src, "w") as f:
                f.write(text)
            flags, artifact = EMITTERS[emitter]
            out = os.path.join(tmp, artifact)
            cmd = [self.tfc, *flags, "--target=" + target, *self.extra_flags, *self._tune_flags(emitter), src, "-o", out]
            self.tfc_calls += 1
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                raise CompileError("tfc failed (exit %d) on a graph partition:\n%s\n%s\n--- the .tir ---\n%s" % (
                    proc.returncode, " ".join(cmd), proc.stderr.strip(), text))
            with open(os.path.join(tmp, "DONE"), "w") as f:
                f.write(" ".join(cmd) + "\n")
            try:
                os.rename(tmp, folder)
            except OSError:
                # another process built it first: theirs is as good as ours
                shutil.rmtree(tmp, ignore_errors=True)
            return folder
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
