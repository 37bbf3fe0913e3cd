#!/usr/bin/env python3
"""Counts a kernel's machine instructions from its SASS, without a GPU: per kernel, the instructions in all and
by opcode, and each loop's body (the instructions from a predicated backward branch's target to the branch: the static
body, branches inside it included, so an upper bound of what one trip executes). A kernel
whose time is its instruction count over its IPC (Nsight Compute's issue slots busy) gets faster only with
fewer instructions per element; this is where to count them (docs/performance.md, 2026-12-05, fifteenth
session: the LayerNorm backward's ~360 instructions a warp a row, found this way).

Usage: sass_count.py [--kernel REGEX] [--top N] CUBIN_OR_SASS
CUBIN_OR_SASS: a cubin (`nvcc $(make -s print-cubin-flags) -cubin -o X.cubin FILE.cu`), disassembled with
cuobjdump (from $CUOBJDUMP, PATH or the CUDA toolkit's bin/; `pip download nvidia-cuda-cuobjdump` has one
where the toolkit lacks it), or a text file of `cuobjdump -sass` output. --kernel: only kernels whose name
(demangled with c++filt where there is one, else mangled) matches REGEX. Prints, per kernel:
    KERNEL NAME
      instructions N (predicated-off never-executed guards, `@!PT`, counted apart: G)
      OPCODE COUNT ... (the N most frequent, default 12)
      loop 0xSTART-0xEND: L instructions
Exit status 0, 1 when no kernel matched, 2 for a usage error or a cubin that could not be disassembled.
"""
import os
import re
import shutil
import signal
import subprocess
import sys

FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
# "        /*0350*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR12][R8.64] ;   /* 0x... */"
INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
# A loop's latch: a predicated branch back (an unconditional one returns from an out-of-line block, e.g. a
# wait's retry; BRA.U.ANY loops over the distinct values of a uniform operand, once when they agree).
LATCH = re.compile(r"^@!?U?P[0-9]+\s+BRA\s+(0x[0-9a-f]+)")


def demangle(names):
    """{mangled: readable} through c++filt where it exists (else the names themselves)."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, check=False)
    lines = out.stdout.splitlines()
    return dict(zip(names, lines)) if len(lines) == len(names) else {n: n for n in names}


def cuobjdump():
    """The cuobjdump to run, or None."""
    cand = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump")]
    cand.append(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump"))
    return next((c for c in cand if c and os.access(c, os.X_OK)), None)


def sass_text(path):
    """The SASS listing of a cubin (cuobjdump -sass) or of a text file; raises RuntimeError."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"\x7fELF":
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    tool = cuobjdump()
    if tool is None:
        raise RuntimeError("no cuobjdump (set CUOBJDUMP; `pip download nvidia-cuda-cuobjdump` has one)")
    out = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass {path} failed: {out.stderr.strip()[:200]}")
    return out.stdout


def kernels(text):
    """[(mangled name, [(offset, instruction text)])] in the listing's order."""
    found, current = [], None
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            current = (m.group(1), [])
            found.append(current)
            continue
        m = INSN.match(line)
        if m and current is not None:
            current[1].append((int(m.group(1), 16), m.group(2)))
    return found


def opcode(insn):
    """The opcode without predicate and modifiers: '@!P2 LDS.128 R28, [R8]' -> 'LDS'."""
    words = insn.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def summary(insns):
    """(instructions, never-executed guards, {opcode: count}, [(start, end, length)] of the loops)."""
    guards = sum(1 for _, s in insns if s.startswith("@!PT "))
    counts = {}
    for _, s in insns:
        if not s.startswith("@!PT "):
            op = opcode(s)
            counts[op] = counts.get(op, 0) + 1
    offsets = [o for o, _ in insns]
    loops = []
    for o, s in insns:
        m = LATCH.match(s)
        if m and int(m.group(1), 16) < o:
            target = int(m.group(1), 16)
            loops.append((target, o, sum(1 for x in offsets if target <= x <= o)))
    return len(insns) - guards, guards, counts, loops


def main(argv):
    args, pattern, top = list(argv), None, 12
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag == "--kernel" and args:
            pattern = re.compile(args.pop(0))
        elif flag == "--top" and args and args[0].isdigit():
            top = int(args.pop(0))
        else:
            print(__doc__.strip().splitlines()[2], file=sys.stderr)
            return 2
    if len(args) != 1 or not os.path.isfile(args[0]):
        print("usage: sass_count.py [--kernel REGEX] [--top N] CUBIN_OR_SASS", file=sys.stderr)
        return 2
    try:
        found = kernels(sass_text(args[0]))
    except RuntimeError as e:
        print(f"sass_count: {e}", file=sys.stderr)
        return 2
    names = demangle([n for n, _ in found])
    shown = 0
    for mangled, insns in found:
        name = names[mangled]
        if pattern and not (pattern.search(name) or pattern.search(mangled)):
            continue
        shown += 1
        total, guards, counts, loops = summary(insns)
        print(name)
        print(f"  instructions {total} (never-executed guards, @!PT, apart: {guards})")
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        print("  " + " ".join(f"{op} {n}" for op, n in ranked))
        for start, end, length in loops:
            print(f"  loop 0x{start:04x}-0x{end:04x}: {length} instructions")
    if shown == 0:
        print("sass_count: no kernel matched", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    sys.exit(main(sys.argv[1:]))
