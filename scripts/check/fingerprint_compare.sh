#!/usr/bin/env bash
# Compares two fingerprint directories of scripts/check/fingerprint.sh: prints IDENTICAL (exit 0) when every
# <run>.fp of either is in both and equal, else, per differing run, its first differing lines (exit 1).
# Usage: fingerprint_compare.sh DIR_A DIR_B
set -u
[ $# -eq 2 ] || { echo "usage: $0 DIR_A DIR_B" >&2; exit 2; }
a=$1 b=$2
runs=$( (cd "$a" 2>/dev/null && ls -- *.fp; cd "$b" 2>/dev/null && ls -- *.fp) 2>/dev/null | sort -u)
[ -n "$runs" ] || { echo "fingerprint_compare: no *.fp files in $a or $b" >&2; exit 2; }
differ=0
for r in $runs; do
  if [ ! -f "$a/$r" ] || [ ! -f "$b/$r" ]; then
    echo "${r%.fp}: only in $([ -f "$a/$r" ] && echo "$a" || echo "$b")"
    differ=1
  elif ! cmp -s "$a/$r" "$b/$r"; then
    n=$(diff "$a/$r" "$b/$r" | grep -c '^[<>]')
    echo "${r%.fp}: $n lines differ; the first (< $a, > $b):"
    diff "$a/$r" "$b/$r" | grep '^[<>]' | head -8 | sed 's/^/  /'
    differ=1
  fi
done
if [ $differ = 0 ]; then echo "IDENTICAL ($(echo "$runs" | wc -l) runs: $(echo $runs | sed 's/\.fp//g'))"; fi
exit $differ
