#!/usr/bin/env bash
# ShellCheck over every shell script of the repository (part of `make test`): warnings and errors fail the case
# (style notes do not), one line per finding in the failure. Skipped on a machine without shellcheck
# (Debian/Ubuntu: apt-get install shellcheck). A script that means what a warning says carries a
# `# shellcheck disable=SCnnnn  # why` note on that line.
set -u
source "$(dirname "$0")/lib_host.sh" shellcheck  # ROOT, WORK, pass/fail/skip
if ! command -v shellcheck > /dev/null 2>&1; then
  skip shellcheck_warnings "shellcheck not found"
  exit 0
fi
cd "$ROOT" || exit 1
mapfile -t scripts < <({ git ls-files '*.sh' 2>/dev/null || find . -name '*.sh' -not -path './third_party/*'; } &&
                       echo .ci/run)
found=$(shellcheck -S warning -f gcc "${scripts[@]}" 2>&1)
if [ ${#scripts[@]} -gt 50 ] && [ -z "$found" ]; then
  pass "shellcheck_warnings (${#scripts[@]} scripts)"
else
  fail shellcheck_warnings "${#scripts[@]} scripts: $(tr '\n' ' ' <<< "$found" | head -c 1500)"
fi
