#!/usr/bin/env bash
# `make deps`: fetch what is missing into third_party/ and check the CUDA toolchain.
# Safe to run twice: anything already present is left alone.
# Overrides (environment): CUDA_HOME, CUDNN_FRONTEND_INCLUDE, CLI11_INCLUDE, CUDNN_INCLUDE, NCCL_INCLUDE.
set -u
cd "$(dirname "$0")/.."
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
check cuDNN cudnn.h libcudnn.so "${CUDNN_INCLUDE:-}"
check NCCL nccl.h libnccl.so "${NCCL_INCLUDE:-}"

if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do echo "deps: MISSING: $m" >&2; done
  exit 1
fi
echo "deps: all dependencies present"
