#!/usr/bin/env python3
"""Test data for the HellaSwag tests (test/host_hellaswag_reference.sh, test/gpu_hellaswag.sh): random
sentences of a few short words, so that a small byte-level model learns them quickly and its token losses
vary (a word's first letter is hard, the rest easy).

    python3 test/hellaswag_fixture.py OUT.jsonl COUNT SEED [TEXT.txt CHARS]

OUT.jsonl: COUNT HellaSwag examples (ctx, 4 endings, a random label) whose rows (ctx + " " + ending) are at
most 60 bytes; TEXT.txt: about CHARS characters of sentences in the same words, for training.
"""
import json
import random
import sys

WORDS = "the a cat dog sat ran on under big small red blue mat house tree bird sang saw ate fish".split()


def words(r, lo, hi, max_chars):
    out = []
    for _ in range(r.randint(lo, hi)):
        w = r.choice(WORDS)
        if len(" ".join(out + [w])) > max_chars:
            break
        out.append(w)
    return " ".join(out or [r.choice(WORDS)])


def main(out, count, seed, text=None, chars=0):
    r = random.Random(int(seed))
    with open(out, "w") as f:
        for _ in range(int(count)):
            ctx = words(r, 3, 8, 36)
            endings = [words(r, 1, 4, 22) for _ in range(4)]
            f.write(json.dumps({"ctx": ctx, "endings": endings, "label": r.randrange(4)}) + "\n")
    if text:
        with open(text, "w") as f:
            n = 0
            while n < int(chars):
                line = words(r, 4, 12, 80) + ".\n"
                f.write(line)
                n += len(line)


if __name__ == "__main__":
    main(*sys.argv[1:])
