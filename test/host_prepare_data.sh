#!/usr/bin/env bash
# scripts/data/prepare_data.py on JSONL, Parquet, directories and globs (part of `make test`; needs python3 only:
# the Parquet case is skipped without pyarrow, and gpt2 runs on a stand-in for tiktoken written here, one id
# per word, so no network or tiktoken is needed). One [PASS]/[FAIL]/[SKIP] line per case.
#   jsonl_equals_text_{bytes,gpt2}: a .jsonl of documents (blank lines, an empty document, a 5 MB one that text
#     files cut into pieces, other fields) gives byte for byte the shards and tokenizer.bin of the same
#     documents as .txt files, tokenized with another --workers count; gpt2 also starts each document with
#     exactly one <|endoftext|>.
#   parquet_equals_text: the same for a Parquet file of several row groups.
#   dir_and_glob_inputs: a directory and a quoted glob give the files in sorted order, the same shards.
#   gpt2_ranks_offline: with tiktoken's download failing (no network), --gpt2-ranks FILE builds the encoding
#     from the file in the main process and in every worker: the same shards as the downloaded encoding's;
#     without it the failure is one line that names --gpt2-ranks; a file that is not one is one line too.
#   offline_message_whole_words: tiktoken's long offline error is shortened at a word boundary ("...").
#   errors_are_one_line: binary inputs (also inside gzip), a damaged gzip file, UTF-16/32 files (named by their byte-order mark), a FIFO
#     (refused before it is opened: no hang, each case under a timeout), a missing or non-string field, bad
#     JSON (with its column), an unwritable --out-dir, a missing input, --shard-tokens that would write more
#     than 10,000 files, .parquet without pyarrow: exit status 2, one line "error: ..." naming the problem, no
#     traceback, no shard written.
#   hellaswag_script: scripts/data/prepare_hellaswag.py --gpt2-ranks FILE offline gives the downloaded encoding's
#     file; its --help says each default once; a FIFO --input and bad JSON are one-line errors.
set -u
source "$(dirname "$0")/lib_host.sh" prepare_data python3  # ROOT, WORK, pass/fail/skip; python3 or skip
PREP="$ROOT/scripts/data/prepare_data.py"

# The stand-in for tiktoken (test/fake_tiktoken): the real vocabulary size and eot id, and a ranks file for it.
# GPT2_RANKS names no file: the ranks `make deps` fetched into third_party/ are not taken when the download fails.
FAKE="$ROOT/test/fake_tiktoken"
python3 "$FAKE/write_ranks.py" "$WORK/gpt2.tiktoken"
export GPT2_RANKS="$WORK/no_ranks_here"
# A pyarrow that cannot be imported (the no-pyarrow case where pyarrow is installed).
mkdir -p "$WORK/nopyarrow/pyarrow"
echo 'raise ImportError("no pyarrow here")' > "$WORK/nopyarrow/pyarrow/__init__.py"

# The documents: as doc_NN.txt files in $WORK/txt, as docs.jsonl, and (with pyarrow) as docs.parquet.
python3 - "$WORK" <<'PY' || { fail prepare_data "could not write the test documents"; exit 1; }
import json, os, random, sys
work = sys.argv[1]
rng = random.Random(5)
words = ["In", "the", "beginning", "caf\u00e9", "\u4e2d\u6587", "\U0001F600", "line\n", "tab\t", "  ", "end."]
docs = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 400))) for _ in range(40)]
docs[3] = ""                                                # an empty document
docs[7] = "\n".join("x" * rng.randrange(1, 200) for _ in range(50000))  # ~5 MB: pieces for a text file
os.makedirs(f"{work}/txt")
for i, d in enumerate(docs):
    with open(f"{work}/txt/doc_{i:02d}.txt", "w", encoding="utf-8") as f:
        f.write(d)
with open(f"{work}/docs.jsonl", "w", encoding="utf-8") as f:
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": i, "text": d, "meta": {"text": "not this"}}) + "\n")
        if i % 10 == 0:
            f.write("\n")                                   # blank lines are skipped
json.dump(len(docs), open(f"{work}/ndocs", "w"))
try:
    import pyarrow as pa, pyarrow.parquet as pq
except ImportError:
    sys.exit(0)
pq.write_table(pa.table({"id": list(range(len(docs))), "body": docs}), f"{work}/docs.parquet", row_group_size=7)
PY
NDOCS=$(cat "$WORK/ndocs")
TXT=$(ls "$WORK"/txt/doc_*.txt | sort)

pythonpath() { echo "$FAKE${PYTHONPATH_EXTRA:+:$PYTHONPATH_EXTRA}${PYTHONPATH:+:$PYTHONPATH}"; }
prep() {  # name args...: runs prepare_data.py into $WORK/out_<name> (stdout+stderr in $WORK/<name>.log)
  local name=$1; shift
  PYTHONPATH="$(pythonpath)" python3 "$PREP" --prefix p --val-fraction 0.1 \
    --shard-tokens 2000000 --out-dir "$WORK/out_$name" "$@" > "$WORK/$name.log" 2>&1
}
same_output() {  # a b: the two output directories hold the same files, byte for byte (and some shards)
  [ -n "$(ls "$WORK/out_$1"/p_train_*.bin 2>/dev/null)" ] && diff -r "$WORK/out_$1" "$WORK/out_$2" >/dev/null
}
# the number of <|endoftext|> ids in a run's shards, and the first id of its first train shard
eot_stats() { python3 - "$WORK/out_$1" <<'PY'
import array, glob, sys
ids = array.array("H")
for p in sorted(glob.glob(sys.argv[1] + "/p_train_*.bin")) + sorted(glob.glob(sys.argv[1] + "/p_val_*.bin")):
    ids.frombytes(open(p, "rb").read()[1024:])
print(ids.count(50256), ids[0])
PY
}

for tk in bytes gpt2; do
  # shellcheck disable=SC2086
  if prep txt_$tk --tokenizer $tk --workers 1 $TXT && prep jsonl_$tk --tokenizer $tk --workers 3 "$WORK/docs.jsonl"; then
    if ! same_output txt_$tk jsonl_$tk; then
      fail jsonl_equals_text_$tk "the shards differ: $(diff -r "$WORK/out_txt_$tk" "$WORK/out_jsonl_$tk" 2>&1 | head -2 | tr '\n' ' ')"
    elif [ $tk = gpt2 ] && [ "$(eot_stats jsonl_$tk)" != "$NDOCS 50256" ]; then
      fail jsonl_equals_text_gpt2 "expected $NDOCS <|endoftext|> tokens, the first one first; got (count, first id) $(eot_stats jsonl_$tk)"
    elif ! grep -q "^tokenized 1 file(s): $NDOCS documents" "$WORK/jsonl_$tk.log"; then
      fail jsonl_equals_text_$tk "the log does not count $NDOCS documents: $(grep tokenized "$WORK/jsonl_$tk.log")"
    elif ! grep -qE 'tokenized .*, [2-9] worker\(s\)\)$' "$WORK/jsonl_$tk.log"; then
      fail jsonl_equals_text_$tk "not tokenized by several workers: $(grep tokenized "$WORK/jsonl_$tk.log")"
    else
      pass "jsonl_equals_text_$tk ($NDOCS documents, $(grep -o 'train: [0-9,]* tokens' "$WORK/jsonl_$tk.log"), $(grep -o '[0-9] worker(s)' "$WORK/jsonl_$tk.log") vs 1)"
    fi
  else
    fail jsonl_equals_text_$tk "a run failed: $(tail -1 "$WORK/txt_$tk.log") $(tail -1 "$WORK/jsonl_$tk.log")"
  fi
done

if [ ! -f "$WORK/docs.parquet" ]; then
  skip parquet_equals_text "pyarrow is not installed (pip install pyarrow)"
elif prep parquet --tokenizer gpt2 --workers 2 --text-field body "$WORK/docs.parquet"; then
  same_output txt_gpt2 parquet && pass "parquet_equals_text (gpt2, $NDOCS documents in row groups of 7)" ||
    fail parquet_equals_text "the shards differ from the text files'"
else
  fail parquet_equals_text "the run failed: $(tail -1 "$WORK/parquet.log")"
fi

# A directory (walked in sorted order; a hidden file skipped) and a quoted glob; --workers 2.
touch "$WORK/txt/.hidden"
if prep dir --tokenizer bytes --workers 2 "$WORK/txt" && prep glob --tokenizer bytes --workers 2 "$WORK/txt/doc_*.txt"; then
  # without --prefix the shards are named after the glob's folder, not its first file
  PYTHONPATH="$(pythonpath)" python3 "$PREP" --tokenizer bytes --val-fraction 0.1 --out-dir "$WORK/out_glob_name" \
    "$WORK/txt/doc_*.txt" > "$WORK/glob_name.log" 2>&1
  if same_output txt_bytes dir && same_output txt_bytes glob && grep -q "tokenized $NDOCS file(s)" "$WORK/dir.log" &&
    [ -n "$(ls "$WORK"/out_glob_name/txt_train_*.bin 2>/dev/null)" ]; then
    pass "dir_and_glob_inputs ($NDOCS files, sorted, same shards as the file list; a glob's shards named after its folder)"
  else
    fail dir_and_glob_inputs "the shards differ from the file list's: $(grep tokenized "$WORK/dir.log" "$WORK/glob.log" | tr '\n' ' ')"
  fi
else
  fail dir_and_glob_inputs "a run failed: $(tail -1 "$WORK/dir.log") $(tail -1 "$WORK/glob.log")"
fi

# GPT-2 BPE without network: the ranks file, in the main process (--workers 1) and in 3 workers.
if FAKE_TIKTOKEN_OFFLINE=1 prep ranks1 --workers 1 --gpt2-ranks "$WORK/gpt2.tiktoken" $TXT &&
   FAKE_TIKTOKEN_OFFLINE=1 prep ranks3 --workers 3 --gpt2-ranks "$WORK/gpt2.tiktoken" $TXT; then
  FAKE_TIKTOKEN_OFFLINE=1 prep offline --workers 1 $TXT; rc=$?
  printf 'not a ranks file\n' > "$WORK/bad.tiktoken"
  FAKE_TIKTOKEN_OFFLINE=1 prep badranks --workers 1 --gpt2-ranks "$WORK/bad.tiktoken" $TXT; rc_bad=$?
  if ! same_output txt_gpt2 ranks1 || ! same_output txt_gpt2 ranks3; then
    fail gpt2_ranks_offline "the shards differ from the downloaded encoding's"
  elif [ $rc != 2 ] || [ "$(wc -l < "$WORK/offline.log")" != 1 ] || ! grep -q "^error: .*--gpt2-ranks FILE" "$WORK/offline.log"; then
    fail gpt2_ranks_offline "without the file: exit $rc, $(tr '\n' ' ' < "$WORK/offline.log" | cut -c1-200)"
  elif [ $rc_bad != 2 ] || [ "$(wc -l < "$WORK/badranks.log")" != 1 ] || ! grep -q "^error: --gpt2-ranks .*not a tiktoken ranks file" "$WORK/badranks.log"; then
    fail gpt2_ranks_offline "a bad ranks file: exit $rc_bad, $(tr '\n' ' ' < "$WORK/badranks.log" | cut -c1-200)"
  else
    pass "gpt2_ranks_offline (same shards with 1 and 3 workers; without it: $(cut -c1-80 "$WORK/offline.log")...)"
  fi
else
  fail gpt2_ranks_offline "a run failed: $(tail -1 "$WORK/ranks1.log") $(tail -1 "$WORK/ranks3.log")"
fi

# A long offline error: shortened where a word ends, "..." where it was cut.
FAKE_TIKTOKEN_OFFLINE=long prep offline_long --workers 1 "$WORK/txt/doc_00.txt"
if [ "$(wc -l < "$WORK/offline_long.log")" = 1 ] && grep -qE '^error: tiktoken could not load .* w[0-9]+x \.\.\.\); it needs network access once, or pass --gpt2-ranks FILE' "$WORK/offline_long.log" &&
   [ "$(grep -o 'w[0-9]*x \.\.\.' "$WORK/offline_long.log" | wc -l)" = 1 ]; then
  pass "offline_message_whole_words ($(grep -o '.\{24\}\.\.\.).\{20\}' "$WORK/offline_long.log"))"
else
  fail offline_message_whole_words "$(cut -c1-400 "$WORK/offline_long.log")"
fi

# Error cases: exit status 2, the whole output's last line is the one error line, the only line on stderr.
printf 'text\0with a NUL\n' > "$WORK/nul.bin"
printf 'not gzip after all' > "$WORK/damaged.txt.gz" && printf '\x1f\x8b' | cat - "$WORK/damaged.txt.gz" > "$WORK/damaged.gz"
printf 'text\0with a NUL\n' | gzip > "$WORK/nul.txt.gz"
printf '{"text": "a"}\n{"body": "b"}\n' > "$WORK/nofield.jsonl"
printf '{"text": "a"}\n\n{"text": 3}\n' > "$WORK/number.jsonl"
printf '{"text": "a"}\n{"text": "b"\n' > "$WORK/badjson.jsonl"
printf 'x' > "$WORK/afile"
printf '\xff\xfeh\0i\0\n\0' > "$WORK/utf16.txt"
printf '\xfe\xff\0{\0}' > "$WORK/utf16be.jsonl"
printf '\xff\xfe\0\0h\0\0\0' > "$WORK/utf32.txt"
mkfifo "$WORK/fifo.txt"
head -c 12000 "$WORK/txt/doc_07.txt" > "$WORK/12k.txt"
errors=0 why=""
expect_error() {  # name want-in-message args...
  local name=$1 want=$2; shift 2
  PYTHONPATH="$(pythonpath)" timeout 60 python3 "$PREP" --tokenizer bytes \
    --out-dir "${OUT_DIR:-$WORK/out_err_$name}" "$@" > "$WORK/err_$name.out" 2> "$WORK/err_$name.err"
  local rc=$? last
  last=$(cat "$WORK/err_$name.out" "$WORK/err_$name.err" | tail -1)
  if [ $rc != 2 ] || [ "$(wc -l < "$WORK/err_$name.err")" != 1 ] || [[ "$last" != "error: "* ]] ||
     [[ "$last" != *"$want"* ]] || grep -q Traceback "$WORK/err_$name.err" ||
     ls "${OUT_DIR:-$WORK/out_err_$name}"/*.bin >/dev/null 2>&1; then
    errors=$((errors + 1))
    why="$why $name (status $rc: $(head -c 300 "$WORK/err_$name.err" | tr '\n' '|'));"
  fi
}
expect_error binary "'$WORK/nul.bin' is not a text file (a NUL byte at offset 4)" "$WORK/txt/doc_00.txt" "$WORK/nul.bin"
expect_error damaged_gzip "'$WORK/damaged.gz': a damaged gzip file" "$WORK/damaged.gz"
expect_error binary_in_gzip "'$WORK/nul.txt.gz' is not a text file (a NUL byte at offset 4)" "$WORK/nul.txt.gz"
expect_error no_field "'$WORK/nofield.jsonl' line 2: no field 'text' (fields: body)" "$WORK/nofield.jsonl"
expect_error number "line 3: field 'text' is int, not a string" "$WORK/number.jsonl"
expect_error bad_json "'$WORK/badjson.jsonl' line 2: not JSON (Expecting ',' delimiter at column 14)" "$WORK/badjson.jsonl"
expect_error utf16 "'$WORK/utf16.txt' is UTF-16 LE text (by its byte-order mark); inputs are UTF-8: convert it first, e.g. iconv -f UTF-16 -t UTF-8" "$WORK/utf16.txt"
expect_error utf16_jsonl "'$WORK/utf16be.jsonl' is UTF-16 BE text (by its byte-order mark)" "$WORK/utf16be.jsonl"
expect_error utf32 "'$WORK/utf32.txt' is UTF-32 LE text (by its byte-order mark)" "$WORK/utf32.txt"
expect_error fifo "'$WORK/fifo.txt' is a FIFO (named pipe), not a regular file" "$WORK/txt/doc_00.txt" "$WORK/fifo.txt"
expect_error many_shards "--shard-tokens 1 would cut 12,000 tokens into 12,000 shard files (at most 10,000): pass --shard-tokens 2 or more" \
  --val-fraction 0.5 --shard-tokens 1 "$WORK/12k.txt"
expect_error missing "cannot read '$WORK/missing.txt': No such file or directory" "$WORK/missing.txt"
expect_error no_match "'$WORK/none_*.jsonl': no file matches" "$WORK/none_*.jsonl"
expect_error bad_workers "--workers must be at least 1" --workers 0 "$WORK/txt/doc_00.txt"
expect_error bad_flag "unrecognized arguments: --nope" --nope "$WORK/txt/doc_00.txt"
OUT_DIR="$WORK/afile/sub" expect_error unwritable "--out-dir '$WORK/afile/sub': cannot write there: Not a directory" \
  "$WORK/txt/doc_00.txt"
if [ "$(id -u)" != 0 ]; then  # root writes anywhere
  mkdir -p "$WORK/ro" && chmod 555 "$WORK/ro"
  OUT_DIR="$WORK/ro" expect_error read_only "--out-dir '$WORK/ro': cannot write there: Permission denied" "$WORK/txt/doc_00.txt"
fi
# .parquet without pyarrow: here pyarrow is absent, or hidden by a pyarrow that fails to import
printf 'PAR1' > "$WORK/fake.parquet"
PYTHONPATH_EXTRA="$WORK/nopyarrow" expect_error no_pyarrow \
  ".parquet inputs need the 'pyarrow' package (pip install pyarrow)" "$WORK/fake.parquet"
if [ $errors = 0 ]; then
  pass "errors_are_one_line (binary, a damaged gzip, binary in gzip, UTF-16/32, FIFO, missing/non-string field, bad JSON, missing input, no glob match, bad flags, unwritable --out-dir, too many shards, no pyarrow)"
else
  fail errors_are_one_line "$errors case(s):$why"
fi

# scripts/data/prepare_hellaswag.py: GPT-2 BPE offline from --gpt2-ranks (the same file as with the download), --help
# with each default once, a FIFO --input and bad JSON as one line each (under a timeout).
HS="$ROOT/scripts/data/prepare_hellaswag.py"
printf '{"ctx": "A man sits", "endings": ["down.", "up.", "on a chair.", "still."], "label": 2}\n' > "$WORK/hs.jsonl"
printf '{"ctx": "A man", "endings": ["a", "b", "c", "d"] "label": 2}\n' > "$WORK/hs_bad.jsonl"
mkfifo "$WORK/hs_fifo.jsonl"
hs() {  # name args...: stdout+stderr in $WORK/hs_<name>.log
  local name=$1; shift
  PYTHONPATH="$(pythonpath)" timeout 60 python3 "$HS" "$@" > "$WORK/hs_$name.log" 2>&1
}
why=""
hs online --input "$WORK/hs.jsonl" --out "$WORK/hs_online.bin" || why="$why online: $(tail -1 "$WORK/hs_online.log");"
FAKE_TIKTOKEN_OFFLINE=1 hs ranks --gpt2-ranks "$WORK/gpt2.tiktoken" --input "$WORK/hs.jsonl" --out "$WORK/hs_ranks.bin" ||
  why="$why --gpt2-ranks: $(tail -1 "$WORK/hs_ranks.log");"
cmp -s "$WORK/hs_online.bin" "$WORK/hs_ranks.bin" || why="$why the --gpt2-ranks file differs;"
FAKE_TIKTOKEN_OFFLINE=1 hs offline --input "$WORK/hs.jsonl" --out "$WORK/hs_offline.bin"
[ $? = 2 ] && grep -q "^error: .*pass --gpt2-ranks FILE" "$WORK/hs_offline.log" || why="$why offline: $(tail -1 "$WORK/hs_offline.log");"
hs help --help
doubled=$(python3 - "$WORK/hs_help.log" <<'PY'
import re, sys
text = " ".join(open(sys.argv[1]).read().split())
print(" ".join(o for o in re.split(r" (?=--[a-z])", text) if o.count("(default") > 1))
PY
)
[ -z "$doubled" ] && grep -q "gpt2-ranks FILE" "$WORK/hs_help.log" || why="$why --help: doubled defaults in: ${doubled:-(no --gpt2-ranks)};"
hs fifo --tokenizer bytes --input "$WORK/hs_fifo.jsonl" --out "$WORK/hs_fifo.bin"
[ $? = 2 ] && [ "$(tail -1 "$WORK/hs_fifo.log")" = "error: --input '$WORK/hs_fifo.jsonl' is a FIFO (named pipe), not a regular file" ] ||
  why="$why FIFO: $(tail -1 "$WORK/hs_fifo.log");"
hs bad_json --tokenizer bytes --input "$WORK/hs_bad.jsonl" --out "$WORK/hs_bad.bin"
[ $? = 2 ] && grep -qx "error: '$WORK/hs_bad.jsonl' line 1: not JSON (Expecting ',' delimiter at column 50)" "$WORK/hs_bad_json.log" ||
  why="$why bad JSON: $(tail -1 "$WORK/hs_bad_json.log");"
if [ -z "$why" ]; then
  pass "hellaswag_script (--gpt2-ranks offline = downloaded, --help defaults once, FIFO and bad JSON one line)"
else
  fail hellaswag_script "$why"
fi
