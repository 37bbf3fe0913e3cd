#!/usr/bin/env bash
# `make deps`: fetch what is missing into third_party/ and check the CUDA toolchain.
# Safe to run twice: anything already present is left alone.
# Overrides (environment): CUDA_HOME, CUDNN_FRONTEND_INCLUDE, CLI11_INCLUDE, CUDNN_INCLUDE, NCCL_INCLUDE;
# SHAKESPEARE_TXT=FILE: a copy of tiny Shakespeare for the quickstart (checked by its checksum).
set -u
cd "$(dirname "$0")/.." || exit 1
TP=third_party
CUDNN_FRONTEND_VERSION=1.23.0
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing=()
first_with() {  # file dir...: the first dir holding file (empty if none)
  local f=$1 d; shift
  for d in "$@"; do [ -n "$d" ] && [ -e "$d/$f" ] && { echo "$d"; return; }; done
}

# --- CLI11 (header-only) ---
cli11_found=""
for d in ${CLI11_INCLUDE:-} /usr/include /usr/local/include "$TP/cli11/usr/include"; do
  [ -n "$d" ] && [ -f "$d/CLI/CLI.hpp" ] && { cli11_found=$d; break; }
done
if [ -z "$cli11_found" ]; then
  echo "deps: CLI11 not found, fetching Debian's libcli11-dev into $TP/cli11"
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download "libcli11-dev" >/dev/null 2>&1); then
    mkdir -p "$TP/cli11" && dpkg -x "$tmp"/libcli11-dev_*.deb "$TP/cli11"
  fi
  rm -rf "$tmp"
  [ -f "$TP/cli11/usr/include/CLI/CLI.hpp" ] && cli11_found="$TP/cli11/usr/include"
fi
[ -n "$cli11_found" ] && echo "deps: CLI11 headers: $cli11_found" || missing+=("CLI11 headers (apt-get install libcli11-dev, or set CLI11_INCLUDE=)")

# --- zlib (crc32 of checkpoint tensors): the system's zlib1g-dev, else Debian's package in third_party ---
# Found exactly as the Makefile's ZLIB_INCLUDE / ZLIB_LIBS find it: the header in /usr/include or
# /usr/local/include, else third_party/zlib; libz.so in the library directories (the Makefile's LIB_DIRS and
# /usr/lib), else third_party/zlib's libz.a.
zlib_dirs_lib=("$CUDA_HOME/lib64" "$CUDA_HOME/lib" /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/lib)
zlib_find() {  # sets zlib_h (header dir) and zlib_l (library file); empty when missing
  zlib_h=$(first_with zlib.h /usr/include /usr/local/include "$TP/zlib/usr/include")
  zlib_l=$(first_with libz.so "${zlib_dirs_lib[@]}")
  if [ -n "$zlib_l" ]; then zlib_l=$zlib_l/libz.so
  elif [ -f "$TP/zlib/usr/lib/x86_64-linux-gnu/libz.a" ]; then zlib_l=$TP/zlib/usr/lib/x86_64-linux-gnu/libz.a
  fi
}
zlib_find
if [ -z "$zlib_h" ] || [ -z "$zlib_l" ]; then
  echo "deps: zlib development files not found (${zlib_h:-no zlib.h}${zlib_h:+zlib.h in $zlib_h}, ${zlib_l:-no libz.so}), fetching Debian's zlib1g-dev into $TP/zlib"
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download "zlib1g-dev" >/dev/null 2>&1); then
    mkdir -p "$TP/zlib" && dpkg -x "$tmp"/zlib1g-dev_*.deb "$TP/zlib"
    rm -f "$TP/zlib/usr/lib/x86_64-linux-gnu/libz.so"  # a link to the runtime library: link libz.a instead
  fi
  rm -rf "$tmp"
  zlib_find
fi
[ -n "$zlib_h" ] && [ -n "$zlib_l" ] && echo "deps: zlib: $zlib_h/zlib.h, $zlib_l" ||
  missing+=("zlib (apt-get install zlib1g-dev)")

# --- cudnn-frontend (header-only, from PyPI's wheel) ---
fe=${CUDNN_FRONTEND_INCLUDE:-$TP/cudnn-frontend/include}
if [ ! -f "$fe/cudnn_frontend.h" ]; then
  echo "deps: fetching nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION headers into $TP/cudnn-frontend"
  bash scripts/fetch_cudnn_frontend.sh "$CUDNN_FRONTEND_VERSION" "$TP/cudnn-frontend"
fi
[ -f "$fe/cudnn_frontend.h" ] && echo "deps: cudnn-frontend headers: $fe" || missing+=("cudnn-frontend headers (pip nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION, or set CUDNN_FRONTEND_INCLUDE=)")

# --- Data for the quickstart and for tokenizing without network (optional: the build needs neither) ---
optional=()
sha_is() {  # file sha256: the file exists and has this checksum
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}
# GPT-2's BPE ranks in tiktoken's format, which scripts/data/prepare_data.py and prepare_hellaswag.py read when
# tiktoken cannot download them: PyPI's openai-whisper source archive ships them (whisper/assets/gpt2.tiktoken).
WHISPER_VERSION=20250625
GPT2_RANKS_SHA256=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930
ranks=$TP/gpt2-bpe/gpt2.tiktoken
if ! sha_is "$ranks" "$GPT2_RANKS_SHA256"; then
  echo "deps: fetching GPT-2's BPE ranks (gpt2.tiktoken of openai-whisper==$WHISPER_VERSION's sources) into $TP/gpt2-bpe"
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps --no-binary :all: -d "$tmp" "openai-whisper==$WHISPER_VERSION" >/dev/null 2>&1 &&
     tar -xzf "$tmp"/openai_whisper-*.tar.gz -C "$tmp" --wildcards '*/whisper/assets/gpt2.tiktoken' 2>/dev/null &&
     sha_is "$(echo "$tmp"/openai_whisper-*/whisper/assets/gpt2.tiktoken)" "$GPT2_RANKS_SHA256"; then
    mkdir -p "$TP/gpt2-bpe" && cp "$tmp"/openai_whisper-*/whisper/assets/gpt2.tiktoken "$ranks"
  fi
  rm -rf "$tmp"
fi
sha_is "$ranks" "$GPT2_RANKS_SHA256" && echo "deps: GPT-2 BPE ranks: $ranks" ||
  optional+=("GPT-2's BPE ranks for tokenizing without network (pip download --no-deps --no-binary :all: openai-whisper==$WHISPER_VERSION, unpack whisper/assets/gpt2.tiktoken to $ranks)")
# tiny Shakespeare (karpathy/char-rnn's data/tinyshakespeare/input.txt, public domain) for
# scripts/runs/shakespeare.sh: no package registry carries it (and the repository keeps no data sets), so a
# copy is named with SHAKESPEARE_TXT=FILE or fetched from its canonical address below.
SHAKESPEARE_SHA256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
text=$TP/shakespeare/input.txt
if [ -n "${SHAKESPEARE_TXT:-}" ] && ! sha_is "$text" "$SHAKESPEARE_SHA256"; then
  if sha_is "$SHAKESPEARE_TXT" "$SHAKESPEARE_SHA256"; then
    mkdir -p "$TP/shakespeare" && cp "$SHAKESPEARE_TXT" "$text"
  else
    missing+=("tiny Shakespeare: SHAKESPEARE_TXT='$SHAKESPEARE_TXT' is not char-rnn's input.txt (1,115,394 bytes, sha256 ${SHAKESPEARE_SHA256:0:12}...)")
  fi
fi
# No registry: its canonical copy, checked by the same checksum (kept only when it matches; without network the
# quickstart's text stays optional, as it is in CI).
SHAKESPEARE_URL=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
if [ -z "${SHAKESPEARE_TXT:-}" ] && [ ! -e "$text" ] && command -v curl >/dev/null 2>&1; then
  echo "deps: fetching tiny Shakespeare from $SHAKESPEARE_URL"
  mkdir -p "$TP/shakespeare"
  if curl -fsSL --connect-timeout 5 --max-time 60 -o "$text.part" "$SHAKESPEARE_URL" 2>/dev/null &&
     sha_is "$text.part" "$SHAKESPEARE_SHA256"; then
    mv "$text.part" "$text"
  else
    rm -f "$text.part"
  fi
fi
if sha_is "$text" "$SHAKESPEARE_SHA256"; then
  echo "deps: tiny Shakespeare: $text"
elif [ -e "$text" ]; then
  optional+=("tiny Shakespeare: $text is not char-rnn's input.txt (its sha256 differs): remove it")
else
  optional+=("tiny Shakespeare for scripts/runs/shakespeare.sh (not fetched from $SHAKESPEARE_URL: no network?; SHAKESPEARE_TXT=path/to/input.txt make deps copies a copy)")
fi

# --- CUDA toolkit, cuBLASLt, cuDNN, NCCL: checked, never installed here ---
[ -x "$CUDA_HOME/bin/nvcc" ] && echo "deps: nvcc: $CUDA_HOME/bin/nvcc" || missing+=("nvcc (CUDA toolkit; set CUDA_HOME=)")
find_file() { # name, dirs...
  local n=$1; shift
  for d in "$@"; do [ -n "$d" ] && [ -e "$d/$n" ] && { echo "$d"; return 0; }; done
  return 1
}
incs=("$CUDA_HOME/include" /usr/include/x86_64-linux-gnu /usr/include /usr/local/include)
libs=("$CUDA_HOME/lib64" "$CUDA_HOME/lib" /usr/lib/x86_64-linux-gnu /usr/local/lib)
check() { # label header lib incoverride
  local label=$1 h=$2 l=$3 ov=${4:-}
  local hi li
  hi=$(find_file "$h" "$ov" "${incs[@]}") || missing+=("$label header $h")
  li=$(find_file "$l" "${libs[@]}") || missing+=("$label library $l")
  [ -n "${hi:-}" ] && [ -n "${li:-}" ] && echo "deps: $label: $hi/$h, $li/$l"
}
check cuBLASLt cublasLt.h libcublasLt.so
# cuDNN: the system's (the default build); a newer one elsewhere (e.g. pip's nvidia-cudnn-cu13) is named with the
# Makefile's CUDNN=newest, which builds against it (scripts/find_cudnn.sh)
check cuDNN cudnn.h libcudnn.so.9 "${CUDNN_INCLUDE:-}"
newest=$(CUDNN_INCS="${incs[*]}" CUDNN_LIBS="${libs[*]}" bash scripts/find_cudnn.sh --list | sed -n 's/^\* //p')
case "$newest" in
  *"(pip("*) echo "deps: newer: $newest: make CUDNN=newest builds against it (a change of flags rebuilds) (docs/performance.md)" ;;
esac
check NCCL nccl.h libnccl.so "${NCCL_INCLUDE:-}"

for m in "${optional[@]}"; do echo "deps: optional, not found: $m"; done
if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do echo "deps: MISSING: $m" >&2; done
  exit 1
fi
echo "deps: all dependencies present"
