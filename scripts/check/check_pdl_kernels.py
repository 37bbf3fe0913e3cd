#!/usr/bin/env python3
"""Every kernel of ours may be launched with programmatic dependent launch (llmc/gpu/launch.cuh), so each must
wait for the kernel before it before touching memory: every __global__ function's body begins with
pdl_wait();, and no launch bypasses launch_kernel() (no <<<...>>> outside comments).
Usage: check_pdl_kernels.py FILE_OR_DIR...   Prints FILE:LINE: what is wrong, one a line; status 1 if any.
"""
import os
import re
import sys


def strip_comments(text):
    """The text with // and /* */ comments blanked (newlines kept, so line numbers stay)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def problems(path):
    code = strip_comments(open(path, encoding="utf-8").read())
    line_of = lambda i: code.count("\n", 0, i) + 1
    out = []
    for m in re.finditer(r"<<<", code):
        out.append(f"{path}:{line_of(m.start())}: a <<<...>>> launch (use launch_kernel)")
    for m in re.finditer(r"\b__global__\b", code):
        brace = code.find("{", m.end())
        name = re.findall(r"(\w+)\s*\(", code[m.end():brace])
        first = code[brace + 1:].lstrip()
        if not first.startswith("pdl_wait();"):
            out.append(f"{path}:{line_of(m.start())}: kernel {name[-1] if name else '?'} does not begin with pdl_wait();")
    return out


def sources(args):
    for a in args:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                for f in sorted(files):
                    if f.endswith((".cu", ".cuh")):
                        yield os.path.join(root, f)
        else:
            yield a


if __name__ == "__main__":
    found = [p for f in sources(sys.argv[1:]) for p in problems(f)]
    if found:
        print("\n".join(found))
    sys.exit(1 if found else 0)
