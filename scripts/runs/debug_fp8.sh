#!/usr/bin/env bash
# Debug helper: small FP8 run, then the same under compute-sanitizer (memcheck).
set -u
args="--model 124m --layers 2 --batch 4 --seq 256 --steps 3 --precision fp8 --log-dir /tmp/dbg --log-every 1"
./train_gpt $args 2>&1 | tail -6
compute-sanitizer --tool memcheck --show-backtrace device ./train_gpt $args 2>&1 | grep -v "^memory" | head -40
