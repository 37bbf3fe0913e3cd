#!/usr/bin/env bash
# The training runs the issues ask for, in one device session: 124M on real text (bf16 vs fp8, same seed and
# data), and GPT-1.5B fp8 for 100 steps. Needs data/kjv (scripts/data/prepare_data.py --tokenizer bytes ...).
set -u
OUT=${OUT:-logs/acceptance}; mkdir -p "$OUT"
steps=${KJV_STEPS:-600}
bash scripts/runs/compare_curves.sh "$OUT/kjv124m" --model 124m --vocab 256 --batch 8 --seq 1024 --steps "$steps" \
  --lr 6e-4 --warmup 50 --train-data 'data/kjv/kjv_train_*.bin' --val-data 'data/kjv/kjv_val_*.bin' \
  --val-every 100 --val-batches 20 --log-every 50 --seed 1234 | tee "$OUT/kjv124m_curves.md"
if [ "${RUN_1P5B_FP8:-1}" = 1 ]; then
  ./train_gpt --model 1.5b --batch 12 --seq 1024 --train-data random --steps 100 --precision fp8 \
    --log-every 10 --fp8-health-every 25 --log-dir "$OUT/fp8_1p5b_100" > "$OUT/fp8_1p5b_100.log" 2>&1
  echo "1.5B fp8 100 steps: rc=$?"; grep -E "^step +(0|50|99)/|fp8 health|summary|error" "$OUT/fp8_1p5b_100.log"
fi
