#!/usr/bin/env python3
"""Lists every function (kernels and methods included) longer than a limit in C++/CUDA sources.

Usage: check_function_length.py [--max N] FILE_OR_DIR...
Exit status 1 when any function is longer than N lines (default 100), with one line per offender:
FILE:LINE: NAME is L lines (limit N). A function's length runs from the line of its opening brace's
signature to its closing brace. Comments and literals are blanked first; a brace opens a function body
when the text before it (since the previous ';', '{' or '}') has a parameter list and is not a control
statement, a type (class/struct/union/enum/namespace) or an initializer. Lambdas count towards the function
that holds them.
"""
import os
import re
import sys

SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else)\s*(\(|$)")
TYPE_HEAD = re.compile(r"\b(class|struct|union|enum|namespace)\b[^()]*$")


def blank_comments_and_literals(text):
    """Comments and string/char literals become spaces (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            m = re.match(r'R"([^(\s]*)\(', text[i - 1 : i + 20]) if c == '"' and i > 0 and text[i - 1] == "R" else None
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
            out.append(c + "".join(ch if ch == "\n" else " " for ch in text[i + 1 : j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def opens_function(head):
    """head: the code between the previous ';', '{' or '}' and this '{'."""
    h = " ".join(head.split())
    if not h or "(" not in h or ")" not in h:
        return False
    if h.startswith("#") or CONTROL.search(h) or TYPE_HEAD.search(h.split("(")[0]):
        return False
    if h.endswith("=") or re.search(r"=\s*$", h) or h.endswith(","):
        return False
    # a call's argument list or an initializer: `f(a, {`, `x = T{`
    if h.count("(") > h.count(")"):
        return False
    return bool(re.search(r"\)\s*(const|override|noexcept|final|mutable|->[^{]*|:[^{]*|\s)*$", h))


def function_name(head):
    h = " ".join(head.split())
    names = [m.group(1) for m in re.finditer(r"([~\w:<>]+)\s*\(", h) if m.group(1) != "__launch_bounds__"]
    return names[0] if names else h[:40]


def long_functions(path, limit):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_comments_and_literals(f.read())
    found, depth, head_start, fn = [], 0, 0, None  # fn: (name, start line, depth at open)
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            if fn is None and opens_function(code[head_start:i]):
                first = code[head_start:i]
                lead = len(first) - len(first.lstrip())
                start = line - first[lead:].count("\n")
                fn = (function_name(first), start, depth)
            depth += 1
            head_start = i + 1
        elif c == "}":
            depth -= 1
            head_start = i + 1
            if fn is not None and depth == fn[2]:
                length = line - fn[1] + 1
                if length > limit:
                    found.append((fn[1], fn[0], length))
                fn = None
        elif c == ";":
            head_start = i + 1
    return found


def main(argv):
    limit, paths = 100, []
    args = iter(argv)
    for a in args:
        if a == "--max":
            limit = int(next(args))
        else:
            paths.append(a)
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(SUFFIXES)]
        else:
            files.append(p)
    bad = 0
    for path in sorted(files):
        for start, name, length in long_functions(path, limit):
            print(f"{path}:{start}: {name} is {length} lines (limit {limit})")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
