#!/usr/bin/env python3
"""Compares the machine code of two builds, kernel by kernel, without a GPU.

Usage: cubin_compare.py OLD_DIR NEW_DIR
Both folders hold .cubin files (ELF, as `nvcc -cubin` writes them) under the same relative paths. For every
kernel the SASS (its `.text.<kernel>` section) and its constant banks (`.nv.constant<N>.<kernel>`, and the
file's shared ones) are compared byte for byte. Kernels in anonymous namespaces carry a per-file hash in their
mangled names; it is replaced by ANON so that the same kernel compiled from another folder matches.
Prints "IDENTICAL: K kernels (machine code and constant banks) in F files" and exits 0, or one line per kernel
that differs or exists on one side only, then a summary, and exits 1; 2 for a usage error or an unreadable file.
Line info and symbol tables are not compared: they follow line numbers and file paths, not the code.
"""
import os
import re
import struct
import sys


def normalize(name):
    """The section name with each anonymous namespace (<len>_GLOBAL__N__...) replaced by 4ANON."""
    out, i = [], 0
    for m in re.finditer(r"(\d+)_GLOBAL__N__", name):
        if m.start() < i:
            continue
        length = int(m.group(1))
        start = m.start(1) + len(m.group(1))
        out.append(name[i:m.start(1)])
        out.append("4ANON")
        i = start + length
    out.append(name[i:])
    return "".join(out)


def sections(path):
    """{normalized section name: bytes} of the code and constant sections of an ELF64 cubin."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] != b"\x7fELF" or blob[4] != 2:
        raise ValueError(f"{path}: not an ELF64 cubin")
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + k * shentsize) for k in range(shnum)]
    strtab = headers[shstrndx][4]

    def name_at(offset):
        end = blob.index(b"\0", strtab + offset)
        return blob[strtab + offset:end].decode()

    out = {}
    for h in headers:
        name = name_at(h[0])
        if name.startswith(".text.") or name.startswith(".nv.constant"):
            sh_type, offset, size = h[1], h[4], h[5]
            data = b"" if sh_type == 8 else blob[offset:offset + size]  # SHT_NOBITS: size only
            out[normalize(name)] = data if sh_type != 8 else b"nobits:%d" % size
    return out


def cubins(root):
    found = []
    for d, _, files in os.walk(root):
        found += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(".cubin")]
    return sorted(found)


def main(argv):
    if len(argv) != 3 or not all(os.path.isdir(a) for a in argv[1:]):
        print("usage: cubin_compare.py OLD_DIR NEW_DIR (folders of .cubin files)", file=sys.stderr)
        return 2
    old_dir, new_dir = argv[1], argv[2]
    old_files, new_files = cubins(old_dir), cubins(new_dir)
    problems, kernels = [], 0
    for f in sorted(set(old_files) - set(new_files)):
        problems.append(f"only in old: {f}")
    for f in sorted(set(new_files) - set(old_files)):
        problems.append(f"only in new: {f}")
    for f in sorted(set(old_files) & set(new_files)):
        try:
            a, b = sections(os.path.join(old_dir, f)), sections(os.path.join(new_dir, f))
        except (OSError, ValueError, struct.error) as e:
            print(f"cubin_compare: {e}", file=sys.stderr)
            return 2
        kernels += sum(1 for s in a if s.startswith(".text.") and s in b)
        for s in sorted(set(a) | set(b)):
            what = s[len(".text."):] if s.startswith(".text.") else s
            kind = "machine code" if s.startswith(".text.") else "constant bank"
            if s not in b:
                problems.append(f"only in old: {f}: {kind} {what}")
            elif s not in a:
                problems.append(f"only in new: {f}: {kind} {what}")
            elif a[s] != b[s]:
                problems.append(f"differ: {f}: {kind} {what}")
    files = len(set(old_files) & set(new_files))
    if not problems:
        print(f"IDENTICAL: {kernels} kernels (machine code and constant banks) in {files} files")
        return 0
    for p in problems:
        print(p)
    print(f"DIFFER: {len(problems)} differences ({kernels} kernels compared in {files} files)")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
