#!/usr/bin/env bash
# Formatting check: every C/C++/CUDA file of the tree (train_gpt.cu, llmc/, dev/, test/, fuzz/; never
# third_party/) must be exactly what clang-format makes of it with the repository's .clang-format.
#   check_format.sh            the whole tree: one "[PASS|FAIL|SKIP] clang_format" line (scripts/run_tests.sh
#                              counts it; make test runs it on every machine), then each file that differs;
#                              exit 1 if any does
#   check_format.sh FILE...    only these files
#   check_format.sh --files    print the tree's files (what make format formats)
# The style is clang-format 14's (CI's): another major version formats some constructs differently, so with
# one (or none) the check is skipped, loudly. CLANG_FORMAT=path picks the binary.
set -u
cd "$(dirname "$0")/../.." || exit 1
want_major=14

tree_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- train_gpt.cu llmc dev test fuzz
  else
    find train_gpt.cu llmc dev test fuzz -type f 2>/dev/null
  fi | grep -E '\.(c|cc|cpp|cu|cuh|h|hpp)$' | grep -v '^third_party/' | sort -u | while read -r f; do
    [ -f "$f" ] && echo "$f"
  done
}

if [ "${1:-}" = "--files" ]; then tree_files; exit 0; fi

skip() { echo "[SKIP] clang_format: $1"; exit 0; }
cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  for c in clang-format-$want_major clang-format; do
    if command -v "$c" >/dev/null 2>&1; then cf=$c; break; fi
  done
fi
[ -n "$cf" ] && command -v "$cf" >/dev/null 2>&1 ||
  skip "clang-format not found (install clang-format-$want_major, or set CLANG_FORMAT=)"
version=$("$cf" --version 2>/dev/null)
major=$(printf '%s\n' "$version" | sed -nE 's/.*version ([0-9]+)\..*/\1/p' | head -1)
[ "$major" = "$want_major" ] ||
  skip "$cf is version ${major:-unknown}; the style is clang-format $want_major's (CI's), so not checked here"

# Lines that differ between FILE and its formatted version (0: formatted).
changed_lines() { "$cf" --style=file "$1" | diff "$1" - | grep -c '^[<>]'; }

if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(tree_files); fi

bad=(); notes=()
for f in "${files[@]}"; do
  n=$(changed_lines "$f")
  if [ "$n" != 0 ]; then
    bad+=("$f"); notes+=("  $f: $n lines differ (see: $cf --style=file $f | diff $f -; fix: make format)")
  fi
done

summary="${#files[@]} files, clang-format $major"
if [ ${#bad[@]} -eq 0 ]; then
  echo "[PASS] clang_format: $summary"
  exit 0
fi
echo "[FAIL] clang_format: ${#bad[@]} not as clang-format makes them ($summary): ${bad[*]}"
printf '%s\n' "${notes[@]}"
exit 1
