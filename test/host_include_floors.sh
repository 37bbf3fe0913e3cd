#!/usr/bin/env bash
# The include order of llmc/ (README "Layout"): a folder includes only itself and the folders below it in
# FLOORS, so the wings stay layers (the run lifecycle over the model over FP8 over the kernels ... down to the
# file formats, which include nothing else of llmc). Reads every #include "llmc/..." in llmc/ (.h .cuh .cpp
# .cu) and prints one [FAIL] line per include that points up a floor or into a folder FLOORS does not list,
# naming file:line. Usage: host_include_floors.sh [LLMC_DIR] (default: this checkout's llmc/).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/test/lib_report.sh"  # pass, fail, skip
LLMC=${1:-$ROOT/llmc}

# Top floor first; the one place this order is written down.
FLOORS=(run model kernels fp8 parallel gpu host formats)

floor_of() {  # index of folder $1 in FLOORS, or nothing
    local i
    for i in "${!FLOORS[@]}"; do [ "${FLOORS[$i]}" = "$1" ] && { echo "$i"; return; }; done
}

bad=0 edges=0
while IFS= read -r hit; do  # FILE:LINE:#include "llmc/TO/..."
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}
    rel=${file#"$LLMC"/}; from=${rel%%/*}
    to=$(sed -E 's#.*"llmc/([^/"]+)/.*#\1#' <<<"$rest")
    where="llmc/$rel:$line"
    from_i=$(floor_of "$from"); to_i=$(floor_of "$to")
    edges=$((edges + 1))
    if [ -z "$from_i" ]; then
        fail include_floors "$where: folder llmc/$from is not in the floor order (test/host_include_floors.sh FLOORS)"
    elif [ -z "$to_i" ]; then
        fail include_floors "$where: includes llmc/$to, which is not in the floor order (FLOORS)"
    elif [ "$to_i" -lt "$from_i" ]; then
        fail include_floors "$where: llmc/$from includes llmc/$to, a floor above it (order: ${FLOORS[*]})"
    else
        continue
    fi
    bad=$((bad + 1))
done < <(grep -rnE --include='*.h' --include='*.cuh' --include='*.cpp' --include='*.cu' \
             '^[[:space:]]*#[[:space:]]*include[[:space:]]*"llmc/' "$LLMC" | sort)

if [ "$edges" = 0 ]; then
    fail include_floors "no #include \"llmc/...\" found under $LLMC"
elif [ "$bad" = 0 ]; then
    pass "include_floors ($edges includes, order: ${FLOORS[*]})"
fi
[ "$bad" = 0 ]
