#!/usr/bin/env bash
# Generates the float64 PyTorch reference files (if absent) and runs the whole-model test against them.
# Usage: scripts/check/run_model_reference_test.sh [TEST_FILTER]     (run from anywhere; works in the repo root)
# Environment: MODEL_REF_DIR (default build/ref), MODEL_REF_PYTHON (default python3), FORCE=1 to regenerate.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MODEL_REF_DIR:-build/ref}
py=${MODEL_REF_PYTHON:-python3}
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
  echo "error: '$py' cannot import torch and numpy (pip install torch numpy, or set MODEL_REF_PYTHON)" >&2
  exit 1
fi
mkdir -p "$dir"
# name, --config, --gelu (must match the configs in test/gpu_model_reference.cu)
for spec in "small small erf" "small_tanh small tanh" "gpt1p5b_2layer gpt1p5b_2layer erf"; do
  read -r name cfg gelu <<<"$spec"
  if [ "${FORCE:-0}" = 1 ] || [ ! -f "$dir/$name.bin" ]; then
    "$py" scripts/reference_gpt.py --config "$cfg" --gelu "$gelu" --out "$dir/$name.bin"
  fi
done
make build/test/gpu_model_reference
MODEL_REF_DIR="$dir" MODEL_REF_PYTHON="$py" build/test/gpu_model_reference "${1:-}"
