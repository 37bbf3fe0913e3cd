#!/usr/bin/env bash
# scripts/data/prepare_data.py's rough edges of the first hour (part of `make test`; python3 only, tiktoken's
# stand-in from test/fake_tiktoken). One [PASS]/[FAIL]/[SKIP] line per case.
#   dir_reads_every_file: a directory holding gzip-compressed text and JSONL and a binary file gives the shards
#     of its text files named one by one, decompressed (it used to stop at its first .gz); the binary file is
#     left out with one warning line.
#   failed_run_leaves_no_folder: a run that fails while tokenizing removes the --out-dir folders it created
#     (empty); a folder that was there before stays.
#   one_progress_line: 30 input files give one "tokenized" line and no line per file.
#   default_ranks_offline: with tiktoken's download failing, the ranks in the checkout's
#     third_party/gpt2-bpe/gpt2.tiktoken (what make deps fetches) are taken, in every worker, with one note
#     line: the shards of the downloaded encoding; GPT2_RANKS=FILE names another file.
set -u
source "$(dirname "$0")/lib_host.sh" prepare_data_edges python3  # ROOT, WORK, pass/fail/skip; python3 or skip
PREP="$ROOT/scripts/data/prepare_data.py"
export PYTHONPATH="$ROOT/test/fake_tiktoken${PYTHONPATH:+:$PYTHONPATH}"
export GPT2_RANKS="$WORK/no_ranks_here"  # not the checkout's third_party/ copy, unless a case says so

prep() {  # name args...: prepare_data.py into $WORK/out_<name>, its output in $WORK/<name>.log
  local name=$1
  shift
  python3 "$PREP" --prefix p --val-fraction 0.2 --out-dir "$WORK/out_$name" "$@" > "$WORK/$name.log" 2>&1
}
same_shards() {  # a b: the two runs' output folders hold the same files, byte for byte (and some shards)
  [ -n "$(ls "$WORK/out_$1"/p_train_*.bin 2>/dev/null)" ] && diff -r "$WORK/out_$1" "$WORK/out_$2" > /dev/null 2>&1
}

# Documents of a few hundred words each.
python3 - "$WORK" <<'PY'
import json, os, random, sys
work = sys.argv[1]
rng = random.Random(7)
words = "the king is dead long live the queen my lord good night sweet prince".split()
doc = lambda: " ".join(rng.choice(words) for _ in range(rng.randrange(200, 600))) + "\n"
os.makedirs(f"{work}/plain")
for name in ("a.txt", "b.txt", "e.txt"):
    open(f"{work}/plain/{name}", "w").write(doc())
with open(f"{work}/plain/c.jsonl", "w") as f:
    for _ in range(5):
        f.write(json.dumps({"text": doc()}) + "\n")
os.makedirs(f"{work}/many")
for i in range(30):
    open(f"{work}/many/doc_{i:02d}.txt", "w").write(doc())
PY

# A directory: b.txt and c.jsonl gzip-compressed, d.png not text.
mkdir -p "$WORK/dir"
cp "$WORK/plain/a.txt" "$WORK/plain/e.txt" "$WORK/dir/"
gzip -c "$WORK/plain/b.txt" > "$WORK/dir/b.txt.gz"
gzip -c "$WORK/plain/c.jsonl" > "$WORK/dir/c.jsonl.gz"
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > "$WORK/dir/d.png"
for tk in bytes gpt2; do
  why=""
  prep "dir_$tk" --tokenizer "$tk" "$WORK/dir" || why="the directory: $(tail -1 "$WORK/dir_$tk.log")"
  prep "named_$tk" --tokenizer "$tk" "$WORK/plain/a.txt" "$WORK/plain/b.txt" "$WORK/plain/c.jsonl" "$WORK/plain/e.txt" ||
    why="$why the files: $(tail -1 "$WORK/named_$tk.log")"
  if [ -z "$why" ]; then
    same_shards "named_$tk" "dir_$tk" || why="the shards differ from those of its files named one by one, decompressed"
    grep -q "^tokenized 4 file(s): 8 documents" "$WORK/dir_$tk.log" || why="$why $(grep tokenized "$WORK/dir_$tk.log");"
    [ "$(grep -c '^warning: left out 1 file(s) .* not text' "$WORK/dir_$tk.log")" = 1 ] &&
      grep -q "d.png' is not a text file (a NUL byte at offset 8)" "$WORK/dir_$tk.log" || why="$why no warning for d.png;"
  fi
  if [ -z "$why" ]; then pass "dir_reads_every_file_$tk (gzip text and JSONL read, d.png left out with a warning)"; else fail "dir_reads_every_file_$tk" "$why"; fi
done
# a named binary file is still an error (test/host_prepare_data.sh checks its message)
prep named_binary --tokenizer bytes "$WORK/dir/a.txt" "$WORK/dir/d.png" && fail dir_reads_every_file "a named binary file was accepted"

# A run that fails while tokenizing (bad JSON in the second file): no folder left behind.
printf '{"text": "fine"}\n{"text": \n' > "$WORK/bad.jsonl"
why=""
python3 "$PREP" --tokenizer bytes --out-dir "$WORK/new/deeper" "$WORK/plain/a.txt" "$WORK/bad.jsonl" > "$WORK/fails.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "^error: '$WORK/bad.jsonl' line 2: not JSON" "$WORK/fails.log" || why="status $rc: $(tail -1 "$WORK/fails.log");"
[ -e "$WORK/new" ] && why="$why $WORK/new is left: $(find "$WORK/new" | tr '\n' ' ');"
mkdir -p "$WORK/existing"
python3 "$PREP" --tokenizer bytes --out-dir "$WORK/existing" "$WORK/bad.jsonl" > "$WORK/fails2.log" 2>&1
[ -d "$WORK/existing" ] && [ -z "$(ls -A "$WORK/existing")" ] || why="$why the existing folder was removed or not left empty;"
if [ -z "$why" ]; then pass "failed_run_leaves_no_folder (the two folders it made removed, an existing one kept)"; else fail failed_run_leaves_no_folder "$why"; fi

# 30 files: one progress line (the summary), none per file.
if prep many --tokenizer bytes --workers 2 "$WORK/many"; then
  per_file=$(grep -c "doc_[0-9][0-9].txt" "$WORK/many.log")
  if [ "$per_file" = 0 ] && [ "$(grep -c '^tokenized 30 file(s)' "$WORK/many.log")" = 1 ]; then
    pass "one_progress_line (30 files: $(grep '^tokenized' "$WORK/many.log" | cut -c1-60)...)"
  else
    fail one_progress_line "$per_file lines name a file; $(grep -c tokenized "$WORK/many.log") 'tokenized' lines"
  fi
else
  fail one_progress_line "the run failed: $(tail -1 "$WORK/many.log")"
fi

# Offline: a copy of the script in a checkout-like folder whose third_party/ holds the ranks, as make deps leaves it.
mkdir -p "$WORK/repo/scripts/data" "$WORK/repo/third_party/gpt2-bpe"
cp "$PREP" "$WORK/repo/scripts/data/"
python3 "$ROOT/test/fake_tiktoken/write_ranks.py" "$WORK/repo/third_party/gpt2-bpe/gpt2.tiktoken"
why=""
prep online --tokenizer gpt2 --workers 1 "$WORK/many" || why="online: $(tail -1 "$WORK/online.log");"
for workers in 1 3; do
  env -u GPT2_RANKS FAKE_TIKTOKEN_OFFLINE=1 python3 "$WORK/repo/scripts/data/prepare_data.py" --prefix p --val-fraction 0.2 \
    --workers $workers --out-dir "$WORK/out_offline$workers" "$WORK/many" > "$WORK/offline$workers.log" 2>&1 ||
    why="$why offline, $workers worker(s): $(tail -1 "$WORK/offline$workers.log");"
  same_shards online "offline$workers" || why="$why $workers worker(s): not the downloaded encoding's shards;"
  [ "$(grep -c "^note: tiktoken could not download the gpt2 encoding (ConnectionError): GPT-2's ranks from $WORK/repo/third_party/gpt2-bpe/gpt2.tiktoken instead$" "$WORK/offline$workers.log")" = 1 ] ||
    why="$why $workers worker(s): not one note line: $(grep -c note "$WORK/offline$workers.log");"
done
GPT2_RANKS="$WORK/repo/third_party/gpt2-bpe/gpt2.tiktoken" FAKE_TIKTOKEN_OFFLINE=1 prep env_ranks --tokenizer gpt2 "$WORK/many" &&
  same_shards online env_ranks || why="$why GPT2_RANKS: $(tail -1 "$WORK/env_ranks.log");"
if [ -z "$why" ]; then pass "default_ranks_offline (third_party/gpt2-bpe's ranks with 1 and 3 workers, one note; GPT2_RANKS)"; else fail default_ranks_offline "$why"; fi
