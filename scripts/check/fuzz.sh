#!/usr/bin/env bash
# Fuzzes the safetensors reader/writer, the JSON parser, the token shard reader (DataLoader), the checkpoint
# reader, the tokenizer file reader and the HellaSwag eval file reader (libFuzzer + AddressSanitizer + UBSan).
# Builds fuzz/fuzz_*.cpp with clang++ into build/fuzz/, generates seeds (fuzz/make_seeds.cpp, plus the
# hand-written ones in fuzz/corpus/), runs each target for FUZZ_SECONDS (default 60) and prints one line per
# target. Exits non-zero if a target does not build or finds a crash, leak, timeout or assertion; the input
# that triggered it is left in build/fuzz/artifacts/ (reproduce: build/fuzz/fuzz_X build/fuzz/artifacts/FILE).
# The corpus grown by a run is kept in build/fuzz/corpus/ and reused by the next run.
# Usage: scripts/check/fuzz.sh [target...]   (targets: json safetensors shard checkpoint tokenizer
# hellaswag; default all).
# Env: FUZZ_SECONDS, CLANGXX.
set -u
cd "$(dirname "$0")/../.." || exit 1
CLANGXX=${CLANGXX:-clang++}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
OUT=build/fuzz
TARGETS=("$@")
ALL_TARGETS=(json safetensors shard checkpoint tokenizer hellaswag)
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")
# Every file reader and writer: llmc/formats includes nothing else of llmc (test/host_include_floors.sh).
LIB_SRCS=(llmc/formats/*.cpp)
# zlib (crc32), chosen like the Makefile's ZLIB_INCLUDE / ZLIB_LIBS: the system's, else the copy that
# `make deps` unpacks into third_party/zlib (static library).
first_with() { local f=$1 d; shift; for d in "$@"; do [ -e "$d/$f" ] && { echo "$d"; return; }; done; }
ZLIB_INCLUDE="" ZLIB_LIBS=-lz
[ -n "$(first_with zlib.h /usr/include /usr/local/include)" ] ||
  ZLIB_INCLUDE="-I$(first_with zlib.h third_party/zlib/usr/include)"
[ -n "$(first_with libz.so /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/lib)" ] ||
  ZLIB_LIBS="$(first_with libz.a third_party/zlib/usr/lib/x86_64-linux-gnu)/libz.a"
ZLIB="$ZLIB_INCLUDE $ZLIB_LIBS"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

if ! command -v "$CLANGXX" >/dev/null 2>&1; then
  echo "fuzz: $CLANGXX not found: libFuzzer needs clang (Debian/Ubuntu: apt-get install clang, as root; or set" \
    "CLANGXX=/path/to/clang++)" >&2
  exit 2
fi
# Building takes a while (about 15 s per binary with the sanitizers): say so before the first one.
echo "fuzz: building the seed generator and ${#TARGETS[@]} target(s) with $CLANGXX (libFuzzer, ASan, UBSan)," \
  "then fuzzing each for ${SECONDS_PER_TARGET}s; build logs in $OUT/"
mkdir -p "$OUT/artifacts"
for t in "${ALL_TARGETS[@]}"; do mkdir -p "$OUT/seeds/$t"; done

# Seeds: valid files from the writers (safetensors and their headers as JSON seeds, shards, checkpoints,
# tokenizer files, HellaSwag eval files) and a few damaged variants.
if ! "$CLANGXX" -std=c++17 -O1 -g -I. $SAN fuzz/make_seeds.cpp "${LIB_SRCS[@]}" $ZLIB \
    -o "$OUT/make_seeds" \
    > "$OUT/make_seeds.log" 2>&1 || ! "$OUT/make_seeds" "$OUT/seeds" >> "$OUT/make_seeds.log" 2>&1; then
  echo "fuzz: building or running the seed generator failed:"; tail -20 "$OUT/make_seeds.log"; exit 1
fi

# Dictionaries: fuzz/fuzz.dict (JSON and safetensors tokens) plus, per target, the format's own words.
dict_extra() {
  case "$1" in
    checkpoint) printf '%s\n' '"\"train_gpt-checkpoint\""' '"\"version\":\"1\""' '"\"step\""' \
      '"\"opt_step\""' '"\"train_data.a\""' '"\"train_data.b\""' '"\"fp8.calibrating\""' '"\"model\""' \
      '"\"recipe\""' '"\"config\""' '"9223372036854775807"' '"9223372036854775808"' '"18446744073709551615"' ;;
    shard) printf '%s\n' '"\x88\xd8\x34\x01"' '"\x01\x00\x00\x00"' '"\x09\x00\x00\x00"' \
      '"\xff\xff\xff\x7f"' '"\x00\x00\x00\x80"' '"\x2b\x01"' '"\x2c\x01"' '"\xff\xff"' ;;
    tokenizer) printf '%s\n' '"GPTTOK1\x00"' '"\x00\x00\x00\x00"' '"\x01\x00\x00\x00"' '"\x00\x01\x00\x00"' \
      '"\xff\xff\xff\xff"' '"\x00\x00\x01\x00"' '"\x01\x00\x01\x00"' '"<|endoftext|>"' ;;
    hellaswag) printf '%s\n' '"HSWAG\x00\x00\x00"' '"\x01\x00\x00\x00"' '"\x03\x00\x00\x00"' '"\x04\x00\x00\x00"' \
      '"\x00\x00\x00\x00"' '"\x2c\x01\x00\x00"' '"\x2b\x01"' '"\x2c\x01"' '"\xff\xff\xff\xff"' ;;
  esac
}

status=0
for t in "${TARGETS[@]}"; do
  bin="$OUT/fuzz_$t"
  if [ ! -f "fuzz/fuzz_$t.cpp" ]; then echo "fuzz_$t: no such target (fuzz/fuzz_$t.cpp)"; status=1; continue; fi
  echo "fuzz_$t: building"
  if ! "$CLANGXX" -std=c++17 -O1 -g -I. -fsanitize=fuzzer $SAN "fuzz/fuzz_$t.cpp" "${LIB_SRCS[@]}" $ZLIB \
      -o "$bin" > "$bin.build.log" 2>&1; then
    echo "fuzz_$t: BUILD FAILED"; tail -20 "$bin.build.log"; status=1; continue
  fi
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  seeds=()
  for d in "$OUT/seeds/$t" "fuzz/corpus/$t"; do [ -d "$d" ] && seeds+=("$d"); done
  dict="$OUT/fuzz_$t.dict"
  { case "$t" in shard|tokenizer|hellaswag) ;; *) cat fuzz/fuzz.dict ;; esac; dict_extra "$t"; } > "$dict"
  log="$OUT/fuzz_$t.log"
  start=$(date +%s)
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$OUT/artifacts/fuzz_$t-" \
    "$corpus" ${seeds[@]+"${seeds[@]}"} > "$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [ -n "$runs" ] || runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' | tail -1)
  files=$(ls "$corpus" | wc -l)
  if [ $rc = 0 ]; then
    echo "fuzz_$t: ok, ${runs:-?} runs in ${secs}s, corpus $files inputs"
  else
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    why=$(grep -m1 -E '^==[0-9]+==ERROR|SUMMARY|runtime error|deadly signal|ERROR: libFuzzer' "$log" | cut -c1-200)
    echo "fuzz_$t: FAILED (exit $rc) after ${runs:-?} runs in ${secs}s: ${why:-see $log}${artifact:+; input: $artifact}"
    status=1
  fi
done
exit $status
