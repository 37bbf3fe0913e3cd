#!/usr/bin/env python3
"""Cut text documents into pieces of at most --max-chars characters, optionally shuffled, as one JSONL file
({"text": piece} a line) for scripts/data/prepare_data.py. Made for loss checks on local text: a corpus whose
documents are long and alike in runs (manuals, changelogs) becomes a stream of short pieces in random order, so
that the validation split (prepare_data.py's tail) is a sample of the same distribution and evaluations repeat.

Inputs, in the order given: files or directories (every file under a directory, recursively, in sorted order;
names starting with '.' are not skipped); NAME.gz is read decompressed. A file that is not UTF-8 text (a NUL
byte in its first 4 KiB, or not decodable) is skipped and counted; a missing input is an error.

Pieces: each document is split at blank lines ("\\n\\n") into paragraphs; a paragraph longer than --max-chars is
split at newlines into lines, and a line longer than that is cut every --max-chars characters. These units are
packed greedily, in order, into pieces: a unit joins the current piece (with the "\\n\\n" between them) while the
piece stays within --max-chars, else it starts the next one. Whitespace-only pieces are dropped. Pieces never
span two documents.

Duplicates (--dedup): a paragraph (or line, or slice, as above) whose text, whitespace collapsed, appeared
before in any document is dropped before the packing; the first occurrence stays. A documentation tree repeats
the same license texts and boilerplate in thousands of files: without this, a validation split cut from the
shuffled pieces is partly text the model has seen verbatim (28% of the 32-token windows of the first loss-check
data), and its loss measures memorization too.

Order: input order, or with --shuffle SEED Python's random.Random(SEED).shuffle of all pieces; then the first
--max-docs (0: all).

Example (the loss-check data of docs/numerics.md, from a Debian machine's documentation):
    python3 scripts/data/cut_documents.py /usr/share/vim /usr/share/doc --max-chars 2000 --dedup --shuffle 0 \\
        --max-docs 40000 --out docs.jsonl
    python3 scripts/data/prepare_data.py docs.jsonl --out-dir data/localdocs --prefix ld

Errors are one line on stderr, the last one, with exit status 1 (2 for bad flags); nothing is written then.
Standard library only.
"""
import argparse
import gzip
import json
import os
import random
import sys


def die(msg):
    print(f"cut_documents: {msg}", file=sys.stderr)
    sys.exit(1)


def input_files(inputs):
    for top in inputs:
        if os.path.isdir(top):
            for d, _, names in sorted(os.walk(top)):
                for n in sorted(names):
                    p = os.path.join(d, n)
                    if os.path.isfile(p) and not os.path.islink(p):
                        yield p
        elif os.path.isfile(top):
            yield top
        else:
            die(f"{top}: no such file or directory")


def read_text(path):
    """The file's text, or None when it is not UTF-8 text."""
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    except (OSError, EOFError):
        return None
    if b"\0" in raw[:4096]:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def units(text, n):
    """Paragraphs; longer ones as lines; longer lines in n-character slices."""
    for para in text.split("\n\n"):
        if len(para) <= n:
            yield para
            continue
        for line in para.split("\n"):
            while len(line) > n:
                yield line[:n]
                line = line[n:]
            yield line


def first_seen(units_in, seen):
    """The units whose text, whitespace collapsed, is not in seen (which they join); blank ones pass."""
    for u in units_in:
        key = " ".join(u.split())
        if key:
            if key in seen:
                continue
            seen.add(key)
        yield u


def pieces_of(text, n, seen=None):
    """text cut into pieces of at most n characters; with seen (a set), the units seen before dropped."""
    out, cur = [], ""
    us = units(text, n) if seen is None else first_seen(units(text, n), seen)
    for u in us:
        joined = cur + "\n\n" + u if cur else u
        if len(joined) <= n:
            cur = joined
        else:
            if cur.strip():
                out.append(cur)
            cur = u
    if cur.strip():
        out.append(cur)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="text files or directories")
    p.add_argument("--out", required=True, help="the JSONL file to write")
    p.add_argument("--max-chars", type=int, default=2000, help="the longest piece, in characters (default 2000)")
    p.add_argument("--shuffle", type=int, default=None, metavar="SEED", help="shuffle the pieces with this seed")
    p.add_argument("--dedup", action="store_true",
                   help="drop every paragraph whose text (whitespace collapsed) appeared before")
    p.add_argument("--max-docs", type=int, default=0, help="keep the first K pieces (0: all)")
    a = p.parse_args()
    if a.max_chars < 1:
        die(f"--max-chars must be at least 1, got {a.max_chars}")
    if a.max_docs < 0:
        die(f"--max-docs must be 0 (all) or more, got {a.max_docs}")
    pieces, files, skipped = [], 0, 0
    seen = set() if a.dedup else None
    for path in input_files(a.inputs):
        text = read_text(path)
        if text is None:
            skipped += 1
            continue
        files += 1
        pieces += pieces_of(text, a.max_chars, seen)
    if not pieces:
        die("no text in the inputs")
    if a.shuffle is not None:
        random.Random(a.shuffle).shuffle(pieces)
    kept = pieces[:a.max_docs] if a.max_docs else pieces
    tmp = a.out + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for s in kept:
                f.write(json.dumps({"text": s}) + "\n")
        os.replace(tmp, a.out)
    except OSError as e:
        die(f"{a.out}: {e.strerror}")
    print(f"cut_documents: {files} text files ({skipped} skipped: not UTF-8 text) -> {len(pieces):,} pieces of at most "
          f"{a.max_chars} characters; wrote {len(kept):,} ({sum(map(len, kept)):,} characters) to {a.out}")


if __name__ == "__main__":
    main()
