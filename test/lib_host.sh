# shellcheck shell=bash
# The prologue of the host shell tests (test/host_*.sh), sourced first:
#   source "$(dirname "$0")/lib_host.sh" NAME [python3]
# sets ROOT (the checkout) and WORK (a fresh temporary folder, made writable and removed at exit, so a test
# may take permissions away inside it), defines pass, fail and skip (lib_report.sh), and with python3 skips the
# whole test, one line, on a machine without python3. Not a test itself.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/host_${1}_XXXXXX")
trap 'chmod -R u+rwx "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
source "$ROOT/test/lib_report.sh"  # pass, fail, skip
if [ "${2:-}" = python3 ] && ! command -v python3 > /dev/null 2>&1; then
  skip "$1" "python3 not found"
  exit 0
fi
