#!/usr/bin/env python3
"""Checks the commands of a walk-through (README.md, scripts/recipes/README.md) against this checkout.

No command uses sudo (a root container has none). Every command in a fenced code block that calls one of our
programs (`./train_gpt`, `python3 scripts/X.py`, `bash scripts/recipes/gpt2.sh`, `bash
scripts/runs/shakespeare.sh`) is checked: each `--flag` it names must be one the program's `--help` lists (the
scripts': train_gpt's).
Then the steps that need neither network nor GPU run as written, in a scratch folder:
  - a block that tokenizes with `--tokenizer bytes` runs whole (a generated text file stands in for the input
    file it names when that does not exist; `apt-get` lines are skipped), a `./train_gpt` line in it with
    `--print-config` added (the resolved configuration; no GPU);
  - `bash scripts/recipes/gpt2.sh SIZE` runs with DRY_RUN=1 (the recipe's data steps on a generated corpus and
    its flags through train_gpt --print-config).
Prints one line per problem and `checked N commands, ran M` last; exit 1 when a problem was found.
Usage: check_walkthrough.py ROOT MARKDOWN...
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

FLAG = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)")


def commands(markdown):
    """The shell lines of the fenced blocks, continuations joined, comments cut: [(block index, line)]."""
    out, block, inside = [], 0, False
    pending = ""
    for raw in open(markdown, encoding="utf-8"):
        line = raw.rstrip("\n")
        if line.startswith("```"):
            inside = not inside
            block += 1
            continue
        if not inside:
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append((block, line))
    return out


def program_of(line):
    """The program a command line calls ('train_gpt', 'scripts/x.py', 'scripts/recipes/gpt2.sh') or None."""
    try:
        words = shlex.split(line.split("&&")[-1].split("|")[0])
    except ValueError:  # a line of a multi-line quoted argument (python3 -c "...")
        return None, []
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    if not words:
        return None, []
    if words[0] == "./train_gpt":
        return "train_gpt", words[1:]
    if words[0] in ("python3", "python") and len(words) > 1 and words[1].startswith("scripts/"):
        return words[1], words[2:]
    if words[0] == "bash" and len(words) > 1 and words[1] in ("scripts/recipes/gpt2.sh", "scripts/runs/shakespeare.sh"):
        return words[1], words[2:]
    return None, []


def help_flags(root, program, cache={}):
    if program not in cache:
        if program == "train_gpt":
            cmd = [os.path.join(root, "train_gpt"), "--help"]
        elif program.endswith(".py"):
            cmd = [sys.executable, os.path.join(root, program), "--help"]
        else:  # the recipe and the quickstart: their flags are train_gpt's
            return help_flags(root, "train_gpt")
        text = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
        cache[program] = set(FLAG.findall(text))
    return cache[program]


def run(cmd, cwd, env=None):
    p = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]


def main(argv):
    if len(argv) < 2:
        print("usage: check_walkthrough.py ROOT MARKDOWN...", file=sys.stderr)
        return 2
    root, problems, checked, ran = os.path.abspath(argv[0]), [], 0, 0
    for md in argv[1:]:
        cmds = commands(md)
        for block, line in cmds:
            if re.search(r"(^|[;&|]\s*)sudo\s", line):  # root containers have no sudo
                problems.append(f"{md}: `{line}`: sudo (say 'as root' instead)")
            program, args = program_of(line)
            if program is None:
                continue
            checked += 1
            known = help_flags(root, program)
            for flag in FLAG.findall(" ".join(args)):
                if flag not in known:
                    problems.append(f"{md}: `{line}`: {program} has no flag {flag}")
        offline = {b for b, line in cmds if "--tokenizer bytes" in line}
        with tempfile.TemporaryDirectory() as work:
            for block, line in cmds:
                program, args = program_of(line)
                if block in offline and not line.startswith("apt-get"):
                    for word in args:  # an input text the block's earlier (skipped) line would have made
                        if word.endswith(".txt") and not os.path.exists(os.path.join(work, word)):
                            with open(os.path.join(work, word), "w") as f:
                                f.write("In the beginning was a walk-through, and it ran as written.\n" * 40000)
                    cmd = line.replace("./train_gpt", os.path.join(root, "train_gpt"))
                    cmd = re.sub(r"(?<![\w/])scripts/", root + "/scripts/", cmd)
                    if program == "train_gpt":
                        cmd += " --print-config"
                elif program == "scripts/recipes/gpt2.sh":
                    cmd = "bash " + os.path.join(root, program) + " " + " ".join(shlex.quote(a) for a in args)
                else:
                    continue
                env = {"DRY_RUN": "1", "OUT": os.path.join(work, "recipe")}
                rc, last = run(cmd, work, env)
                ran += 1
                if rc != 0:
                    problems.append(f"{md}: `{line}` failed (exit {rc}): {last[0]}")
    for p in problems:
        print(p)
    print(f"checked {checked} commands, ran {ran}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
