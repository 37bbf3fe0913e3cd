#!/usr/bin/env bash
# scripts/runs/shakespeare.sh (`make quickstart`) without a GPU (part of `make test`; needs python3 and the built
# ./train_gpt; tiktoken's stand-in from test/fake_tiktoken and a generated text stand in for GPT-2's BPE and tiny
# Shakespeare). One [PASS]/[FAIL]/[SKIP] line per case.
#   dry_run: DRY_RUN=1 tokenizes the text (the last 10% for validation) and checks the run's flags through
#     train_gpt --print-config: the plan names GPT-2 124m, bf16, 250 steps of 8 x 1024 tokens, validation every
#     25 steps on 4 batches, the yardsticks (ln 50257 = 10.82 and the unigram cross-entropy, recomputed here
#     from the text), runs/shakespeare_bf16; the text is named as not tiny Shakespeare.
#   extra_flags_win: --precision fp8 --steps 100 --lr 1e-3: the plan and the folder say fp8 and 100 steps.
#   data_prepared_once: a second run reuses the shards; a changed text prepares them again.
#   errors_are_one_line: no text, no ranks, a flag train_gpt refuses, no tiktoken: exit 2, one line each.
#   run_with_a_stand_in: a stand-in train_gpt (the real one's --print-config, a train.jsonl of its own):
#     samples.txt holds the three samples, the summary names the last and the lowest validation loss and the
#     yardsticks, loss.png is drawn (with matplotlib) or its absence explained.
set -u
source "$(dirname "$0")/lib_host.sh" quickstart python3  # ROOT, WORK, pass/fail/skip; python3 or skip
QS="$ROOT/scripts/runs/shakespeare.sh"
if [ ! -x "$ROOT/train_gpt" ]; then skip quickstart "./train_gpt is not built (make train_gpt)"; exit 0; fi
export PYTHONPATH="$ROOT/test/fake_tiktoken${PYTHONPATH:+:$PYTHONPATH}"
python3 "$ROOT/test/fake_tiktoken/write_ranks.py" "$WORK/gpt2.tiktoken"

# A text of ~100K stand-in tokens (a word or a space each): each split holds more than a batch, 8 x 1024 + 1.
python3 - "$WORK/text.txt" <<'PY'
import random, sys
rng = random.Random(11)
words = "ROMEO: JULIET: thou art my lord and I am thine own good night sweet prince".split()
with open(sys.argv[1], "w") as f:
    for _ in range(5000):
        # rare words too, so that the yardstick's smoothing of unseen tokens shows in its second decimal
        f.write(" ".join(rng.choice(words) if rng.random() < 0.7 else f"w{rng.randrange(30000)}"
                         for _ in range(rng.randrange(5, 15))) + "\n")
PY
# The unigram yardstick, computed from the text's stand-in tokens (not from the shards the script reads).
unigram=$(python3 - "$WORK/text.txt" <<'PY'
import collections, math, sys
import tiktoken
ids = [50256] + tiktoken.get_encoding("gpt2").encode_ordinary(open(sys.argv[1]).read())
n_val = round(len(ids) * 0.1)
train, val = ids[:-n_val], ids[-n_val:]
counts = collections.Counter(train)
print(f"{-sum(math.log((counts[t] + 1) / (len(train) + 50257)) for t in val) / len(val):.2f}")
PY
)
qs() {  # name [extra flags...]: the quickstart in dry-run mode, output in $WORK/<name>.log
  local name=$1
  shift
  DRY_RUN=1 TEXT="${TEXT:-$WORK/text.txt}" DATA="$WORK/data" RANKS="${RANKS:-$WORK/gpt2.tiktoken}" \
    timeout 120 bash "$QS" "$@" > "$WORK/$name.log" 2>&1
}

why=""
qs dry || why="status $?: $(tail -1 "$WORK/dry.log")"
for want in "plan: GPT-2 124m (L=12, C=768) from scratch, bf16, 250 steps x 8,192 tokens = 2.0M tokens" \
  "  evaluation  validation every 25 steps (4 batches, " \
  "  yardsticks  a random model's loss 10.82 (ln of the vocabulary); the val tokens under the train tokens' frequencies $unigram" \
  "  results     runs/shakespeare_bf16: " "note: $WORK/text.txt is not tiny Shakespeare" \
  "would run: $ROOT/train_gpt --model 124m --gelu tanh --train-data $WORK/data/shakespeare_train_\\*.bin"; do
  grep -qF -- "$want" "$WORK/dry.log" || why="$why no '$want';"
done
[ -n "$(ls "$WORK"/data/shakespeare_train_*.bin "$WORK"/data/shakespeare_val_*.bin 2>/dev/null)" ] && [ -f "$WORK/data/tokenizer.bin" ] ||
  why="$why no shards or tokenizer.bin in $WORK/data;"
if [ -z "$why" ]; then pass "dry_run (124m, 250 x 8 x 1024, yardsticks 10.82 and $unigram)"; else fail dry_run "$why"; fi

why=""
qs extra --precision fp8 --steps 100 --lr 1e-3 || why="status $?: $(tail -1 "$WORK/extra.log")"
grep -q "^plan: GPT-2 124m (L=12, C=768) from scratch, fp8, 100 steps x 8,192 tokens" "$WORK/extra.log" &&
  grep -q "^  schedule    lr 0.001, " "$WORK/extra.log" && grep -q "^  results     runs/shakespeare_fp8: " "$WORK/extra.log" &&
  grep -q "^would run: .* --log-dir runs/shakespeare_fp8 .* --precision fp8 --steps 100 --lr 1e-3 $" "$WORK/extra.log" ||
  why="$why $(grep -E '^(plan|  schedule|  results|would run)' "$WORK/extra.log" | tr '\n' ' ' | head -c 400)"
if [ -z "$why" ]; then pass "extra_flags_win (fp8, 100 steps, lr 1e-3, runs/shakespeare_fp8)"; else fail extra_flags_win "$why"; fi

why=""
qs again && grep -q "^data: $WORK/data is up to date" "$WORK/again.log" || why="not reused: $(head -1 "$WORK/again.log");"
before=$(cat "$WORK"/data/shakespeare_val_*.bin | cksum)
echo "a new last line" >> "$WORK/text.txt"
qs changed && ! grep -q "up to date" "$WORK/changed.log" && [ "$(cat "$WORK"/data/shakespeare_val_*.bin | cksum)" != "$before" ] ||
  why="$why a changed text was not prepared again: $(head -1 "$WORK/changed.log");"
if [ -z "$why" ]; then pass "data_prepared_once (reused, then prepared again for a changed text)"; else fail data_prepared_once "$why"; fi

errors=0 why=""
expect_error() {  # name want-in-the-line args...
  local name=$1 want=$2 rc
  shift 2
  qs "$name" "$@"
  rc=$?
  if [ $rc != 2 ] || [ "$(grep -c '^error' "$WORK/$name.log")" != 1 ] || [[ "$(tail -1 "$WORK/$name.log")" != "error: "*"$want"* ]]; then
    errors=$((errors + 1)) why="$why $name (status $rc): $(tail -1 "$WORK/$name.log");"
  fi
}
TEXT="$WORK/none.txt" expect_error no_text "$WORK/none.txt: no such file: make deps puts tiny Shakespeare there"
RANKS="$WORK/none.tiktoken" expect_error no_ranks "$WORK/none.tiktoken: no such file: make deps fetches GPT-2's BPE ranks there"
expect_error bad_flag "train_gpt --print-config refused the flags: error: --steps: must be >= 1, got 0" --steps 0
mkdir -p "$WORK/notiktoken/tiktoken" && echo 'raise ImportError("no tiktoken here")' > "$WORK/notiktoken/tiktoken/__init__.py"
echo "changed again" >> "$WORK/text.txt"
PYTHONPATH="$WORK/notiktoken" expect_error no_tiktoken "scripts/data/prepare_data.py failed: error: --tokenizer gpt2 needs the 'tiktoken' package"
if [ $errors = 0 ]; then pass "errors_are_one_line (no text, no ranks, a refused flag, no tiktoken)"; else fail errors_are_one_line "$why"; fi

# The whole run with a stand-in train_gpt: the real one's --print-config, else a train.jsonl whose validation loss
# is lowest (4.75) at step 150 and ends at 4.9 (step 249), samples after steps 0, 125 and 249.
mkdir -p "$WORK/bin"
cat > "$WORK/bin/train_gpt" <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --print-config ] && exec "$ROOT/train_gpt" "\$@"; done
log=""
while [ \$# -gt 0 ]; do [ "\$1" = --log-dir ] && log=\$2; shift; done
mkdir -p "\$log" && python3 - "\$log/train.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for s in range(250):
        if s % 25 == 0 or s == 249:
            f.write(json.dumps({"kind": "val", "step": s, "val_loss": 4.75 + ((s - 150) / 100) ** 2 * (0.15 / 0.99 ** 2)}) + "\n")
        f.write(json.dumps({"kind": "train", "step": s, "loss": 11 - s / 50, "step_ms": 10.0, "tokens_per_s": 819200.0}) + "\n")
        if s in (0, 125, 249):
            f.write(json.dumps({"kind": "sample", "step": s, "text": f"ROMEO:\\nsample after step {s}"}) + "\n")
PY
SH
printf '#!/bin/sh\necho "GPU 0: a stand-in"\n' > "$WORK/bin/nvidia-smi"
chmod +x "$WORK/bin/train_gpt" "$WORK/bin/nvidia-smi"
why=""
(cd "$WORK" && PATH="$WORK/bin:$PATH" TRAIN_GPT="$WORK/bin/train_gpt" TEXT="$WORK/text.txt" DATA="$WORK/data" \
  RANKS="$WORK/gpt2.tiktoken" timeout 120 bash "$QS" > "$WORK/run.log" 2>&1) || why="status $?: $(tail -1 "$WORK/run.log");"
out="$WORK/runs/shakespeare_bf16"
[ "$(grep -c '^--- step [0-9]* ---$' "$out/samples.txt" 2>/dev/null)" = 3 ] && grep -q "^sample after step 249$" "$out/samples.txt" ||
  why="$why samples.txt: $(head -c 200 "$out/samples.txt" 2>&1 | tr '\n' '|');"
grep -qE "^shakespeare: done in [0-9]+ s: val loss 4\.900 at step 249 \(lowest 4\.750 at step 150; a random model 10\.82, the train tokens' frequencies $unigram\)$" "$WORK/run.log" ||
  why="$why summary: $(grep '^shakespeare' "$WORK/run.log");"
grep -q "^  samples   runs/shakespeare_bf16/samples.txt$" "$WORK/run.log" || why="$why no samples line;"
# the --generate command for the checkpoint, with the run's model flags (a checkpoint of another model is refused)
grep -qE "^  more text ./train_gpt --model 124m --layers 12 --channels 768 --heads 12 --gelu tanh --precision bf16 --resume runs/shakespeare_bf16/checkpoints --tokenizer $WORK/data/tokenizer.bin --prompt \"ROMEO:\" --generate 200" "$WORK/run.log" ||
  why="$why the generate line: $(grep 'more text' "$WORK/run.log");"
if python3 -c "import matplotlib" 2> /dev/null; then
  [ -s "$out/loss.png" ] && grep -q "^  curves    runs/shakespeare_bf16/loss.png$" "$WORK/run.log" || why="$why no loss.png;"
else
  grep -q "^  curves    none: compare: matplotlib is not installed" "$WORK/run.log" || why="$why the missing PNG unexplained;"
fi
if [ -z "$why" ]; then pass "run_with_a_stand_in (samples.txt, the summary with the lowest val loss and the yardsticks, the curves, the --generate line)"; else fail run_with_a_stand_in "$why"; fi
