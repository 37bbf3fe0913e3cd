#!/usr/bin/env bash
# The first run: GPT-2 124M from scratch on tiny Shakespeare on one GPU in about a minute, to a validation loss
# the README states, with text samples and the loss curve at the end.
#
#   bash scripts/runs/shakespeare.sh [extra train_gpt flags...]      e.g. --precision fp8 (they win)
#   make quickstart [PRECISION=fp8]                                  builds train_gpt first
#
# 1. data: TEXT into GPT-2 BPE shards with scripts/data/prepare_data.py (GPT-2's ranks from `make deps`, no
#    network; the last 10% of the tokens for validation), again only when TEXT changed;
# 2. train: 250 steps of 8 x 1024 tokens (~7 passes over the 304K train tokens, the number of steps that the
#    curve in the README was measured with), validation every 25 steps, a text sample after steps 0, 125 and 249,
#    a checkpoint at the end;
# 3. results: the samples in $OUT/samples.txt, the curves in $OUT/loss.png (scripts/compare.py, with
#    matplotlib), the validation loss next to two yardsticks computed from the data: a random model's
#    ln(vocabulary) and the cross-entropy of the validation tokens under the training tokens' frequencies.
#
# Environment [defaults]:
#   OUT        the run's folder: config.json, train.jsonl, samples.txt, loss.png, checkpoints/
#              [runs/shakespeare_PRECISION]
#   TEXT       the text [third_party/shakespeare/input.txt, from `make deps`]; another UTF-8 text trains the
#              same way (the README's numbers are tiny Shakespeare's)
#   DATA       the shards' folder [data/shakespeare]
#   RANKS      GPT-2's BPE ranks [third_party/gpt2-bpe/gpt2.tiktoken, from `make deps`]
#   TRAIN_GPT  the binary [./train_gpt of this checkout]
#   DRY_RUN=1  no GPU: prepares the data, checks the flags through train_gpt --print-config, prints the plan
#              and the command
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
die() {
  echo "error: $*" >&2
  exit 2
}

TEXT=${TEXT:-$ROOT/third_party/shakespeare/input.txt}
DATA=${DATA:-$ROOT/data/shakespeare}
RANKS=${RANKS:-$ROOT/third_party/gpt2-bpe/gpt2.tiktoken}
TRAIN_GPT=${TRAIN_GPT:-$ROOT/train_gpt}
DRY_RUN=${DRY_RUN:-0}
TINY_SHAKESPEARE_SHA256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
PREFIX=shakespeare
START_S=$(date +%s)

command -v python3 > /dev/null 2>&1 || die "python3 not found (it prepares the data)"
[ -x "$TRAIN_GPT" ] || die "$TRAIN_GPT: not built (make train_gpt in $ROOT, or set TRAIN_GPT)"
[ -f "$TEXT" ] || die "$TEXT: no such file: make deps puts tiny Shakespeare there (fetched, or SHAKESPEARE_TXT=FILE), or set TEXT"
[ -f "$RANKS" ] || die "$RANKS: no such file: make deps fetches GPT-2's BPE ranks there, or set RANKS"

# 1. The shards, prepared again when the text (by its checksum) or the ranks changed.
prepare_data() {
  local stamp="$DATA/source.sha256" want
  want="$(sha256sum "$TEXT" | cut -d' ' -f1) $(sha256sum "$RANKS" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$DATA/tokenizer.bin" ] &&
    compgen -G "$DATA/${PREFIX}_val_*.bin" > /dev/null; then
    echo "data: $DATA is up to date (prepared from $TEXT)"
    return
  fi
  mkdir -p "$DATA"
  rm -f "$stamp" "$DATA/${PREFIX}"_train_*.bin "$DATA/${PREFIX}"_val_*.bin
  python3 "$ROOT/scripts/data/prepare_data.py" --val-fraction 0.1 --prefix "$PREFIX" --gpt2-ranks "$RANKS" \
    --out-dir "$DATA" "$TEXT" > "$DATA/prepare_data.txt" 2>&1 ||
    die "scripts/data/prepare_data.py failed: $(tail -1 "$DATA/prepare_data.txt")"
  echo "$want" > "$stamp"
  echo "data: $(grep -E '^tokenized' "$DATA/prepare_data.txt") -> $DATA"
}
prepare_data
if [ "$(sha256sum "$TEXT" | cut -d' ' -f1)" != "$TINY_SHAKESPEARE_SHA256" ]; then
  echo "note: $TEXT is not tiny Shakespeare (its checksum differs): the README's numbers do not apply"
fi

# 2. The run's flags into FLAGS; the user's extra flags come after them and win.
quickstart_flags() {  # log-dir
  FLAGS=(--model 124m --gelu tanh --train-data "$DATA/${PREFIX}_train_*.bin" --val-data "$DATA/${PREFIX}_val_*.bin"
    --batch 8 --seq 1024 --steps 250 --lr 6e-4 --warmup 25 --schedule cosine --final-lr-frac 0.1 --weight-decay 0.1
    --val-every 25 --val-batches 4 --sample-every 125 --sample-tokens 128 --log-every 25 --log-dir "$1"
    --checkpoint-dir "$1/checkpoints" --keep-checkpoints 1
    --no-gemm-variants)  # its tuning (~8 s on a fresh GPU) would outlast this 250-step run's gain
}

# train_gpt --print-config of the flags into $1; the one-line error and exit 2 when train_gpt refuses them.
resolve_config() {  # out.json log-dir [extra flags...]
  local out=$1
  quickstart_flags "$2"
  shift 2
  "$TRAIN_GPT" "${FLAGS[@]}" "$@" --print-config > "$out" 2> "$out.err" ||
    die "train_gpt --print-config refused the flags: $(tail -1 "$out.err")"
}

# A member of a config.json (as Python prints it).
json_get() {  # file key
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# The yardsticks of the data: ln(vocabulary), a random model's loss; the validation tokens' cross-entropy under
# the training tokens' frequencies (add-one smoothing over the vocabulary), what a model that learned only
# which tokens are common scores.
yardsticks() {  # -> "random unigram" (two numbers)
  python3 - "$DATA" "$PREFIX" <<'PY'
import array, collections, glob, math, struct, sys
data, prefix = sys.argv[1], sys.argv[2]
def tokens(split):
    ids = array.array("H")
    for p in sorted(glob.glob(f"{data}/{prefix}_{split}_*.bin")):
        ids.frombytes(open(p, "rb").read()[1024:])
    return ids
vocab = struct.unpack("<I", open(f"{data}/tokenizer.bin", "rb").read()[12:16])[0]
train, val = tokens("train"), tokens("val")
counts = collections.Counter(train)
unigram = -sum(math.log((counts[t] + 1) / (len(train) + vocab)) for t in val) / len(val)
print(f"{math.log(vocab):.2f} {unigram:.2f}")
PY
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
resolve_config "$TMP/first.json" "$TMP/unused" "$@"
OUT=${OUT:-runs/shakespeare_$(json_get "$TMP/first.json" precision)}
resolve_config "$TMP/config.json" "$OUT" "$@"
LOG_DIR=$(json_get "$TMP/config.json" log_dir)  # the user's --log-dir wins

print_plan() {
  python3 - "$TMP/config.json" "$DATA" "$PREFIX" "$LOG_DIR" "$(yardsticks)" <<'PY'
import glob, json, struct, sys
c = json.load(open(sys.argv[1]))
data, prefix, log_dir, (random_loss, unigram) = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split()
def count(split):
    return sum(struct.unpack("<3i", open(p, "rb").read(12))[2] for p in glob.glob(f"{data}/{prefix}_{split}_*.bin"))
train, val = count("train"), count("val")
step_tokens = c["total_batch"] or c["batch"] * c["seq"]
tokens = c["steps"] * step_tokens
schedule = f"cosine to {c['final_lr_frac']} x lr" if c["schedule"] == "cosine" else "constant"
print(f"plan: GPT-2 {c['model']} (L={c['layers']}, C={c['channels']}) from scratch, {c['precision']}, {c['steps']} steps"
      f" x {step_tokens:,} tokens = {tokens / 1e6:.1f}M tokens ({tokens / train:.1f} passes over {train:,} train tokens)")
print(f"  schedule    lr {c['lr']}, {c['warmup']} warmup steps, {schedule}, weight decay {c['weight_decay']}")
seen = min(c["val_batches"] * c["batch"] * c["seq"], val)
print(f"  evaluation  validation every {c['val_every']} steps ({c['val_batches']} batches, {seen:,} of {val:,} val"
      f" tokens); samples every {c['sample_every']} steps and after the last")
print(f"  yardsticks  a random model's loss {random_loss} (ln of the vocabulary); the val tokens under the train"
      f" tokens' frequencies {unigram}")
print(f"  results     {log_dir}: train.jsonl, samples.txt, loss.png, checkpoints")
PY
}
print_plan

if [ "$DRY_RUN" = 1 ]; then
  quickstart_flags "$OUT"
  echo "dry run: the data prepared in $DATA, the flags checked (train_gpt --print-config)"
  echo "would run: $(printf '%q ' "$TRAIN_GPT" "${FLAGS[@]}" "$@")"
  exit 0
fi

nvidia-smi -L > /dev/null 2>&1 || die "no GPU found (nvidia-smi -L failed); DRY_RUN=1 checks the run without one"
quickstart_flags "$OUT"
set +e
"$TRAIN_GPT" "${FLAGS[@]}" "$@"
rc=$?
set -e
[ $rc = 0 ] || die "train_gpt failed (status $rc; its error is above)"

# 3. The samples, the curves and the summary, from the run's train.jsonl.
python3 - "$LOG_DIR/train.jsonl" "$LOG_DIR/samples.txt" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
with open(sys.argv[2], "w") as f:
    for r in records:
        if r.get("kind") == "sample":
            f.write(f"--- step {r['step']} ---\n{r['text']}\n\n")
PY
python3 "$ROOT/scripts/compare.py" "$LOG_DIR" --png "$LOG_DIR/loss.png" --curves > "$LOG_DIR/compare.txt" 2>&1 ||
  echo "warning: scripts/compare.py failed: $(tail -1 "$LOG_DIR/compare.txt")" >&2
python3 - "$LOG_DIR/train.jsonl" "$(($(date +%s) - START_S))" "$(yardsticks)" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
val = [(r["step"], r["val_loss"]) for r in records if r.get("kind") == "val" and r["val_loss"] is not None]
random_loss, unigram = sys.argv[3].split()
if not val:
    sys.exit(f"error: {sys.argv[1]} has no validation loss")
low = min(val, key=lambda v: v[1])
print(f"shakespeare: done in {sys.argv[2]} s: val loss {val[-1][1]:.3f} at step {val[-1][0]} (lowest {low[1]:.3f} at"
      f" step {low[0]}; a random model {random_loss}, the train tokens' frequencies {unigram})")
PY
echo "  samples   $LOG_DIR/samples.txt"
if [ -f "$LOG_DIR/loss.png" ]; then
  echo "  curves    $LOG_DIR/loss.png"
else
  echo "  curves    none: $(tail -1 "$LOG_DIR/compare.txt")"
fi
echo "  log       $LOG_DIR/train.jsonl (python3 scripts/compare.py runs/shakespeare_bf16 runs/shakespeare_fp8 compares two runs)"
# More text from the checkpoint: --generate with the run's model flags (a checkpoint of another model is refused).
gen_flags=$(python3 - "$TMP/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"--model {c['model']} --layers {c['layers']} --channels {c['channels']} --heads {c['heads']} --gelu {c['gelu']}"
      f" --precision {c['precision']}")
PY
)
echo "  more text ./train_gpt $gen_flags --resume $(json_get "$TMP/config.json" checkpoint_dir)" \
  "--tokenizer $DATA/tokenizer.bin --prompt \"ROMEO:\" --generate 200 --temperature 0.8"
