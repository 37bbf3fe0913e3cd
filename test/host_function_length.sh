#!/usr/bin/env bash
# No function (kernels and methods included) over 100 lines in llmc/, train_gpt.cu, test/, dev/ or fuzz/
# (scripts/check/check_function_length.py). Part of `make test`; python3 only. One [PASS]/[FAIL]/[SKIP] line per case.
#   checker_catches: the checker flags a generated 102-line kernel (its template line counts) and a 101-line method and passes a 100-line function,
#     so the tree case can fail.
#   tree: the repository's llmc/, train_gpt.cu and its tests (test/, dev/, fuzz/).
set -u
source "$(dirname "$0")/lib_host.sh" function_length python3  # ROOT, WORK, pass/fail/skip; python3 or skip
CHECK="$ROOT/scripts/check/check_function_length.py"

# body LINES: a function body of LINES - 2 statements (with its signature line and closing brace: LINES).
body() { for ((i = 0; i < $1 - 2; i++)); do echo "    x += $i;  // {"; done; }
{
  echo 'template <int N>'
  echo '__global__ void __launch_bounds__(256, 1) long_kernel(float* x) {'; body 101; echo '}'
  echo 'struct S {'
  echo '    int method(int x) const {'; body 101; echo '    }'
  echo '};'
  echo 'int fits(int x) {'; body 100; echo '}'
  echo 'int table[] = {1, 2,'; body 120; echo '};'
} >"$WORK/sample.cu"
out=$(python3 "$CHECK" "$WORK/sample.cu")
rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 2 ] && printf '%s\n' "$out" | grep -q 'long_kernel is 102' &&
  printf '%s\n' "$out" | grep -q 'method is 101'; then
  pass checker_catches
else
  fail checker_catches "expected long_kernel (102 lines with its template line) and method (101) only, status 1; got status $rc: $out"
fi

out=$(cd "$ROOT" && python3 "$CHECK" llmc train_gpt.cu test dev fuzz)
if [ $? = 0 ]; then pass tree; else fail tree "$(printf '%s\n' "$out" | head -5 | tr '\n' ' ')"; fi
