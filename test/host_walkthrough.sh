#!/usr/bin/env bash
# The walk-throughs work as written (scripts/check/check_walkthrough.py): every flag that README.md's and
# scripts/recipes/README.md's commands give train_gpt or a script is one it has, and the steps that need no
# network or GPU run (the byte-tokenized data example with train_gpt --print-config, each recipe command with
# DRY_RUN=1). Part of `make test`; needs python3 and the built ./train_gpt. One [PASS]/[FAIL]/[SKIP] line per case.
#   checker_catches: a walk-through with an unknown flag, sudo and a step that fails is reported (so `walkthroughs`
#     can fail).
#   walkthroughs: the two READMEs of this checkout.
set -u
source "$(dirname "$0")/lib_host.sh" walkthrough python3  # ROOT, WORK, pass/fail/skip; python3 or skip
if [ ! -x "$ROOT/train_gpt" ]; then skip walkthrough "./train_gpt is not built (make train_gpt)"; exit 0; fi
CHECK="$ROOT/scripts/check/check_walkthrough.py"

cat >"$WORK/bad.md" <<'MD'
```
./train_gpt --model 124m --no-such-flag 3
sudo apt-get install bible-kjv
python3 scripts/data/prepare_data.py --tokenizer bytes --out-dir data/x missing_dir/
```
MD
out=$(cd "$ROOT" && python3 "$CHECK" "$ROOT" "$WORK/bad.md" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'has no flag --no-such-flag' <<<"$out" && grep -q 'prepare_data.py.*failed' <<<"$out" &&
  grep -q 'sudo (say' <<<"$out"; then
  pass checker_catches
else
  fail checker_catches "exit $rc: $(tr '\n' ' ' <<<"$out")"
fi

out=$(cd "$ROOT" && python3 "$CHECK" "$ROOT" README.md scripts/recipes/README.md 2>&1)
rc=$?
if [ $rc = 0 ]; then pass walkthroughs "$(tail -1 <<<"$out")"; else fail walkthroughs "$(tr '\n' ' ' <<<"$out")"; fi
