#!/usr/bin/env bash
# scripts/data/cut_documents.py (part of `make test`): the piece rule on a hand-checked document, every piece
# within --max-chars and the text kept (random documents), --dedup (by hand and on random documents with
# repeats), --shuffle's determinism, --max-docs, skipped binary
# and read .gz files, and one-line errors. One [PASS]/[FAIL] line per case.
set -u
source "$(dirname "$0")/lib_host.sh" cut_documents python3  # ROOT, WORK, pass/fail/skip
cut="$ROOT/scripts/data/cut_documents.py"

# a: 10 chars, b: 13, then a 30-char line: with 25, "a\n\nb" packs (exactly 25), the long line is cut 25 + 5 and neither
# slice joins its neighbour (52, 32 > 25); a second file starts its own pieces (a blank paragraph inside one stays).
mkdir -p "$WORK/hand"
printf 'aaaaaaaaaa\n\nbbbbbbbbbbbbb\n\n%s' "$(printf 'c%.0s' $(seq 30))" > "$WORK/hand/1.txt"
printf 'dd\n\n   \n\nee' > "$WORK/hand/2.txt"
python3 "$cut" "$WORK/hand" --max-chars 25 --out "$WORK/hand.jsonl" > "$WORK/hand.out" 2>&1
got=$(python3 -c 'import json, sys; print(json.dumps([json.loads(l)["text"] for l in open(sys.argv[1])]))' "$WORK/hand.jsonl" 2>&1)
want='["aaaaaaaaaa\n\nbbbbbbbbbbbbb", "ccccccccccccccccccccccccc", "ccccc", "dd\n\n   \n\nee"]'
if [ "$got" = "$want" ]; then
  pass "piece_rule (paragraphs packed, a long line cut, files apart)"
else
  fail piece_rule "got $got, want $want ($(cat "$WORK/hand.out"))"
fi

# random documents: paragraphs and lines of random lengths, some far longer than --max-chars
python3 - "$WORK/rand" <<'PY'
import os, random, sys
r = random.Random(7)
os.makedirs(sys.argv[1])
for i in range(20):
    paras = ["\n".join("".join(r.choice("xyz ") for _ in range(r.choice([3, 40, 150, 700])))
                       for _ in range(r.randint(1, 4))) for _ in range(r.randint(1, 30))]
    open(f"{sys.argv[1]}/{i:02d}.txt", "w").write("\n\n".join(paras))
PY
python3 "$cut" "$WORK/rand" --max-chars 300 --out "$WORK/rand.jsonl" > /dev/null 2>&1
m=$(python3 - "$WORK/rand" "$WORK/rand.jsonl" <<'PY'
import json, os, sys
pieces = [json.loads(l)["text"] for l in open(sys.argv[2])]
longest = max(map(len, pieces))
text = "".join(open(os.path.join(sys.argv[1], n)).read() for n in sorted(os.listdir(sys.argv[1])))
kept = lambda s: "".join(s.split())  # the characters, whitespace aside
ok = longest <= 300 and kept("".join(pieces)) == kept(text)
print(f"{len(pieces)} pieces, longest {longest}, text {'kept' if kept(''.join(pieces)) == kept(text) else 'CHANGED'}")
sys.exit(0 if ok else 1)
PY
) && pass "random_documents ($m)" || fail random_documents "$m"

for s in 1 1b 2; do
  python3 "$cut" "$WORK/rand" --max-chars 300 --shuffle "${s%b}" --out "$WORK/s$s.jsonl" > /dev/null 2>&1
done
if cmp -s "$WORK/s1.jsonl" "$WORK/s1b.jsonl" && ! cmp -s "$WORK/s1.jsonl" "$WORK/s2.jsonl" &&
   [ "$(sort "$WORK/s1.jsonl" | md5sum)" = "$(sort "$WORK/rand.jsonl" | md5sum)" ] &&
   ! cmp -s "$WORK/s1.jsonl" "$WORK/rand.jsonl"; then
  pass "shuffle (a seed repeats, another seed differs, the same pieces as unshuffled)"
else
  fail shuffle "seed 1 twice / seed 2 / unshuffled do not compare as expected"
fi

python3 "$cut" "$WORK/rand" --max-chars 300 --shuffle 1 --max-docs 5 --out "$WORK/k.jsonl" > "$WORK/k.out" 2>&1
if [ "$(wc -l < "$WORK/k.jsonl")" = 5 ] && [ "$(head -5 "$WORK/s1.jsonl")" = "$(cat "$WORK/k.jsonl")" ] &&
   grep -q "wrote 5 (" "$WORK/k.out"; then
  pass "max_docs (the first 5 of the shuffled pieces)"
else
  fail max_docs "$(wc -l < "$WORK/k.jsonl") lines: $(cat "$WORK/k.out")"
fi

# --dedup: a paragraph seen before (whitespace aside) is dropped, in its own file too, the first occurrence stays;
# a blank paragraph is not a duplicate. Without --dedup all of it is kept (the case "piece_rule" packs the same).
mkdir -p "$WORK/dup"
printf 'license text\n\nalpha\n\nlicense   text' > "$WORK/dup/1.txt"
printf 'license\ntext\n\n  \n\nbeta\n\nalpha' > "$WORK/dup/2.txt"
for d in "" --dedup; do
  python3 "$cut" "$WORK/dup" --max-chars 100 $d --out "$WORK/dup$d.jsonl" > /dev/null 2>&1
done
texts() { python3 -c 'import json, sys; print(json.dumps([json.loads(l)["text"] for l in open(sys.argv[1])]))' "$1" 2>&1; }
got=$(texts "$WORK/dup--dedup.jsonl")
want='["license text\n\nalpha", "  \n\nbeta"]'
all='["license text\n\nalpha\n\nlicense   text", "license\ntext\n\n  \n\nbeta\n\nalpha"]'
if [ "$got" = "$want" ] && [ "$(texts "$WORK/dup.jsonl")" = "$all" ]; then
  pass "dedup_paragraphs (the repeats dropped across and within files, blank ones kept)"
else
  fail dedup_paragraphs "got $got, want $want"
fi

# --dedup on random documents with repeated paragraphs: every unit of the output is distinct (whitespace aside)
# and the distinct units of the input are all there.
python3 - "$WORK/rdup" <<'PY'
import os, random, sys
r = random.Random(11)
os.makedirs(sys.argv[1])
common = ["".join(r.choice("xyz ") for _ in range(r.choice([5, 60, 200]))) for _ in range(15)]
for i in range(30):
    paras = [r.choice(common) if r.random() < 0.5 else "".join(r.choice("xyz ") for _ in range(r.choice([5, 60, 200])))
             for _ in range(r.randint(1, 20))]
    open(f"{sys.argv[1]}/{i:02d}.txt", "w").write("\n\n".join(paras))
PY
python3 "$cut" "$WORK/rdup" --max-chars 250 --dedup --shuffle 3 --out "$WORK/rdup.jsonl" > /dev/null 2>&1
m=$(python3 - "$WORK/rdup" "$WORK/rdup.jsonl" <<'PY'
import json, os, sys
norm = lambda u: " ".join(u.split())
out = [norm(u) for l in open(sys.argv[2]) for u in json.loads(l)["text"].split("\n\n") if norm(u)]
ins = {norm(u) for n in os.listdir(sys.argv[1]) for u in open(os.path.join(sys.argv[1], n)).read().split("\n\n") if norm(u)}
ok = len(out) == len(set(out)) and set(out) == ins
print(f"{len(out)} units out, {len(set(out))} distinct, {len(ins)} distinct in")
sys.exit(0 if ok else 1)
PY
) && pass "dedup_random (every unit once: $m)" || fail dedup_random "$m"

mkdir -p "$WORK/mixed"
printf 'plain text\n' > "$WORK/mixed/a.txt"
printf 'zipped text\n' | gzip > "$WORK/mixed/b.txt.gz"
printf 'bin\0ary' > "$WORK/mixed/c.bin"
printf '\xff\xfe not utf-8' > "$WORK/mixed/d.txt"
python3 "$cut" "$WORK/mixed" --out "$WORK/mixed.jsonl" > "$WORK/mixed.out" 2>&1
if grep -q "^cut_documents: 2 text files (2 skipped: not UTF-8 text)" "$WORK/mixed.out" &&
   grep -q '"zipped text\\n"' "$WORK/mixed.jsonl" && grep -q '"plain text\\n"' "$WORK/mixed.jsonl"; then
  pass "gz_read_binary_skipped"
else
  fail gz_read_binary_skipped "$(cat "$WORK/mixed.out") | $(head -c 200 "$WORK/mixed.jsonl")"
fi

why=""
for case in "--max-chars 0|--max-chars must be at least 1, got 0" "--max-docs -1|--max-docs must be 0 (all) or more, got -1" \
            "$WORK/none|$WORK/none: no such file or directory"; do
  args=${case%%|*} msg=${case#*|}
  rm -f "$WORK/e.jsonl"
  # shellcheck disable=SC2086
  err=$(python3 "$cut" "$WORK/hand" $args --out "$WORK/e.jsonl" 2>&1 > /dev/null)
  rc=$?
  [ $rc = 1 ] && [ "$err" = "cut_documents: $msg" ] && [ ! -e "$WORK/e.jsonl" ] || why="$why [$args: status $rc, '$err']"
done
mkdir -p "$WORK/empty"
err=$(python3 "$cut" "$WORK/empty" --out "$WORK/e.jsonl" 2>&1 > /dev/null)
[ "$err" = "cut_documents: no text in the inputs" ] || why="$why [empty: '$err']"
if [ -z "$why" ]; then pass "errors_one_line (bad values, a missing input, no text: nothing written)"; else fail errors_one_line "$why"; fi
