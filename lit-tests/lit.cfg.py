# Configuration of the TensorForge lit suite, for LLVM 14's lit and FileCheck.
#
#   python3 /usr/lib/llvm-14/build/utils/lit/lit.py -v \
#       --param tfc=/path/to/tfc --param exec_root=/tmp/x lit-tests
#
# `go test ./lit-tests` builds tfc and runs exactly that. Tests are the .tir
# files below this directory, in folders that mirror the code (parser/,
# graph/, passes/, tfc/, ...); `Inputs/` folders hold files the tests read.

import os
import shutil
import tempfile

import lit.formats

config.name = "TensorForge"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tir"]
config.excludes = ["Inputs", "lit.cfg.py", "lit_test.go"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

# Per-test scratch files (%t) live outside the source tree.
config.test_exec_root = lit_config.params.get("exec_root") or os.environ.get("TFC_LIT_EXEC_ROOT")
if not config.test_exec_root:
    config.test_exec_root = tempfile.mkdtemp(prefix="tfc-lit-")

llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-14/bin")
for tool in ("FileCheck", "not"):
    if not os.path.exists(os.path.join(llvm_bin, tool)):
        lit_config.fatal(
            "%s not found in %s: install LLVM 14's tools (apt-get install llvm-14-tools)" % (tool, llvm_bin)
        )

tfc = lit_config.params.get("tfc") or os.environ.get("TFC_BIN") or shutil.which("tfc")
if not tfc or not os.path.exists(tfc):
    lit_config.fatal("no tfc binary: pass --param tfc=/path/to/tfc or set TFC_BIN (go build -o /tmp/tfc ./tfc)")
tfc = os.path.abspath(tfc)

# FileCheck and not come from LLVM 14 whatever else is on PATH.
config.environment["PATH"] = os.pathsep.join([llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Tests choose these explicitly (`env TFC_ENABLE_TEST_PASSES=1 %tfc ...`).
for var in ("TFC_ENABLE_TEST_PASSES", "TFC_DEBUG"):
    config.environment.pop(var, None)

# tfc run keeps the objects of its C runtime and harness (and the programs
# it built) in a cache, which lit's environment would leave without a home:
# one cache for the suite, in its scratch directory, so that they are
# compiled once per run rather than once per test.
config.environment["TFC_CACHE_DIR"] = os.path.join(config.test_exec_root, "tfc-cache")

config.substitutions.append(("%tfc", tfc))
# -O2 with resident splits of 64 KiB at every row count (not the default:
# lower-to-loops{resident=true}, with split-rows-below=1 so that a few rows
# are not split instead): the tests of the resident form, whose
# expectations name the splits of that size (counted as f32).
config.substitutions.append(("%{o2-resident}", "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,"
                             "lower-to-loops{resident=true,resident-bytes=65536,split-rows-below=1},sram-alloc"))
