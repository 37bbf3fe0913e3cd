#!/usr/bin/env bash
# The run-lifecycle acceptance on one GPU, in one call: export -> PyTorch / transformers -> same loss, and
# --init-from of each export reproduces it; GPT-1.5B fp8 kill-and-resume (40 steps, stopped near 20);
# a 124M fp8 run of 2000 steps on real text with samples. Logs under ${OUT:-logs/lifecycle}.
# Usage: scripts/runs/lifecycle_acceptance.sh [export] [resume1p5b] [train2000]   (default: all)
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-logs/lifecycle}; mkdir -p "$OUT"
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(export train2000 resume1p5b)
has() { for w in "${what[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
W=$(mktemp -d /tmp/lifecycle_XXXXXX)
summary=()

if has export; then
  # one batch of random GPT-2 tokens, as a val shard for the trainer and as TOKENS.bin for check_export.py
  python3 - "$W" <<'PY'
import os, struct, sys, random
d = sys.argv[1]; B, T = 4, 1024; random.seed(5)
tok = [random.randrange(50257) for _ in range(B * T + 1)]
with open(os.path.join(d, "batch_val_000000.bin"), "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(tok), *([0] * 253))); f.write(struct.pack("<%dH" % len(tok), *tok))
inp = [tok[b * T + t] for b in range(B) for t in range(T)]; tgt = [tok[b * T + t + 1] for b in range(B) for t in range(T)]
with open(os.path.join(d, "tokens.bin"), "wb") as f:
    f.write(struct.pack("<2i", B, T)); f.write(struct.pack("<%di" % (2 * B * T), *inp, *tgt))
PY
  for gelu in erf tanh; do
    base=(./train_gpt --model 124m --gelu "$gelu" --batch 4 --seq 1024 --val-data "$W/batch_val_*.bin" --val-batches 1)
    "${base[@]}" --steps 8 --log-dir "$W/l_$gelu" --checkpoint-dir "$W/ck_$gelu" > "$OUT/export_train_$gelu.txt" 2>&1
    fmt=seed; dst=$W/seed_$gelu.safetensors; [ $gelu = tanh ] && { fmt=hf; dst=$W/hf_$gelu; }
    "${base[@]}" --resume "$W/ck_$gelu" --log-dir "$W/le_$gelu" --export "$dst" --export-format $fmt > "$OUT/export_$gelu.txt" 2>&1
    loss=$(grep -o "val loss [0-9.]*" "$OUT/export_$gelu.txt" | tail -1 | awk '{print $3}')
    if [ $fmt = seed ]; then chk=(--seed "$dst"); else chk=(--hf "$dst"); fi
    python3 scripts/check/check_export.py "${chk[@]}" --tokens "$W/tokens.bin" --expect-loss "${loss:-nan}" --gelu $gelu > "$OUT/check_$gelu.txt" 2>&1
    rc=$?
    summary+=("export $fmt ($gelu): trainer val loss ${loss:-?}; check_export.py (rc $rc): $(tail -2 "$OUT/check_$gelu.txt" | tr '\n' ' ')")
    "${base[@]}" --init-from "$dst" --log-dir "$W/li_$gelu" --export "$W/again_$gelu.safetensors" > "$OUT/import_$gelu.txt" 2>&1
    loss2=$(grep -o "val loss [0-9.]*" "$OUT/import_$gelu.txt" | tail -1 | awk '{print $3}')
    summary+=("init-from the $fmt export ($gelu): val loss ${loss2:-?} (export run: ${loss:-?}) $(grep -m1 '^error' "$OUT/import_$gelu.txt")")
  done
fi

if has resume1p5b; then
  LIFECYCLE_ARGS="--model 1.5b --batch 12 --seq 1024" LIFECYCLE_STEPS=40 LIFECYCLE_STOP_AT=20 LIFECYCLE_ONLY=resume_bitexact_fp8 \
    timeout 400 bash test/gpu_lifecycle.sh > "$OUT/resume1p5b.txt" 2>&1
  summary+=("GPT-1.5B fp8: $(grep -E '^\[' "$OUT/resume1p5b.txt")")
fi

if has train2000; then
  ./train_gpt --model 124m --vocab 256 --precision fp8 --batch 8 --seq 1024 --steps 2000 --lr 1e-3 --warmup 100 \
    --train-data 'data/kjv/kjv_train_*.bin' --val-data 'data/kjv/kjv_val_*.bin' --val-every 250 --val-batches 10 \
    --sample-every 500 --sample-tokens 120 --prompt "And God said" --temperature 0.8 --log-every 100 \
    --log-dir "$OUT/kjv_fp8" > "$OUT/train2000.txt" 2>&1
  summary+=("124M fp8 2000 steps on KJV (rc $?):" "$(grep -E 'val loss|sample:|skipped|summary|^error' "$OUT/train2000.txt")")
fi
rm -rf "$W"
echo "================ lifecycle"
for s in "${summary[@]}"; do echo "$s"; done
