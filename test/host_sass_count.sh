#!/usr/bin/env bash
# scripts/check/sass_count.py on made-up `cuobjdump -sass` listings (part of `make test`; python3 only; no GPU,
# no cuobjdump).
#   counts_and_loops: two kernels of random length, built here with what each should count: instructions
#     (the never-executed `@!PT` guards apart), opcodes without predicates and modifiers, and the loops: a
#     predicated branch back (its body from the target to the branch) is one, while a forward branch, an
#     unconditional branch back (an out-of-line retry block returning) and BRA.U.ANY are not.
#   kernel_filter: --kernel keeps the kernels whose (demangled or mangled) name matches; none matching: a
#     line, status 1.
#   usage_errors: no argument, a missing file, an unknown flag: status 2.
set -u
source "$(dirname "$0")/lib_host.sh" sass_count python3  # ROOT, WORK, pass/fail/skip; python3 or skip
TOOL="$ROOT/scripts/check/sass_count.py"

# The listing and, beside it, what the tool should print for each kernel (expected.json).
python3 - "$WORK" <<'PY'
import json, random, sys
work = sys.argv[1]
rng = random.Random()
lines, expected = ["", "Fatbin elf code:", "================", "arch = sm_90a", ""], {}


def emit(off, text):
    lines.append(f"        /*{off:04x}*/                   {text} ;  /* 0x000000000000794d */")
    lines.append("                                                                 /* 0x000fc00000000000 */")


for k, name in enumerate(["_Z10kernel_onePfi", "_Z10kernel_twoPKfPfi"]):
    lines.append(f"\t\tFunction : {name}")
    lines.append("\t.headerflags\t@\"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"")
    off, counts, guards, loops = 0, {}, 0, []

    def add(text, op=None):
        global off
        emit(off, text)
        if op:
            counts[op] = counts.get(op, 0) + 1
        off += 16

    add("S2R R0, SR_TID.X", "S2R")
    for _ in range(rng.randint(1, 5)):
        add("@!PT LDS RZ, [RZ]")
        guards += 1
    add("@P0 BRA 0x%x" % (off + 0x40), "BRA")  # forward: not a loop
    start = off
    body = rng.randint(3, 40)
    for i in range(body):
        op = rng.choice(["FFMA", "FADD.FTZ", "IMAD.WIDE", "LDS.128", "@!P2 FMUL"])
        add(f"{op} R{i % 60}, R1, R2", op.split()[-1].split(".")[0])
    add(f"@!P1 BRA 0x{start:x}", "BRA")  # the loop's latch
    loops.append((start, off - 16, body + 1))
    add("UBLKCP.S.G [UR10], [UR4], UR9", "UBLKCP")
    add(f"@P0 BRA.U.ANY 0x{off - 16:x}", "BRA")  # not a loop
    add("EXIT", "EXIT")
    retry = off
    add("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR9], R37", "SYNCS")
    add(f"BRA 0x{start + 16:x}", "BRA")  # an out-of-line block returning: not a loop
    total = sum(counts.values())
    expected[name[4:14]] = {"total": total, "guards": guards, "counts": counts,
                      "loops": [f"loop 0x{a:04x}-0x{b:04x}: {n} instructions" for a, b, n in loops]}
    lines.append("\t\t..........")
    lines.append("")
open(f"{work}/listing.sass", "w").write("\n".join(lines) + "\n")
json.dump(expected, open(f"{work}/expected.json", "w"))
PY

out=$(python3 "$TOOL" --top 50 "$WORK/listing.sass" 2>&1)
rc=$?
verdict=$(python3 - "$WORK/expected.json" "$out" <<'PY'
import json, re, sys
expected, out = json.load(open(sys.argv[1])), sys.argv[2].splitlines()
problems = []
blocks, current = {}, None
for line in out:
    if not line.startswith("  "):
        current = line.strip()
        blocks[current] = []
    elif current is not None:
        blocks[current].append(line.strip())
if len(blocks) != len(expected):
    problems.append(f"{len(blocks)} kernels printed, {len(expected)} expected")
for name, want in expected.items():
    got = next((v for k, v in blocks.items() if name in k), None)  # demangled where c++filt is, or not
    if got is None:
        problems.append(f"{name} not printed")
        continue
    head = f"instructions {want['total']} (never-executed guards, @!PT, apart: {want['guards']})"
    if not got or got[0] != head:
        problems.append(f"{name}: '{got[0] if got else ''}' instead of '{head}'")
    pairs = re.findall(r"(\S+) (\d+)", got[1] if len(got) > 1 else "")
    if {op: int(n) for op, n in pairs} != want["counts"]:
        problems.append(f"{name}: opcodes {pairs} instead of {want['counts']}")
    if got[2:] != want["loops"]:
        problems.append(f"{name}: loops {got[2:]} instead of {want['loops']}")
print("; ".join(problems) if problems else "ok")
PY
)
if [ $rc = 0 ] && [ "$verdict" = ok ]; then
  pass counts_and_loops
else
  fail counts_and_loops "status $rc: $verdict"
fi

one=$(python3 "$TOOL" --kernel 'kernel_two' "$WORK/listing.sass" 2>&1)
rc1=$?
none=$(python3 "$TOOL" --kernel 'no_such_kernel' "$WORK/listing.sass" 2>&1)
rc2=$?
if [ $rc1 = 0 ] && printf '%s\n' "$one" | grep -q kernel_two && ! printf '%s\n' "$one" | grep -q kernel_one &&
  [ $rc2 = 1 ] && [ "$(printf '%s\n' "$none" | wc -l)" = 1 ] && printf '%s\n' "$none" | grep -q 'no kernel matched'; then
  pass kernel_filter
else
  fail kernel_filter "one kernel: status $rc1 ($one); none: status $rc2 ($none)"
fi

python3 "$TOOL" > /dev/null 2>&1; a=$?
python3 "$TOOL" "$WORK/no_such_file" > /dev/null 2>&1; b=$?
python3 "$TOOL" --bogus "$WORK/listing.sass" > /dev/null 2>&1; c=$?
if [ $a = 2 ] && [ $b = 2 ] && [ $c = 2 ]; then
  pass usage_errors
else
  fail usage_errors "statuses $a, $b, $c instead of 2, 2, 2"
fi
