#!/usr/bin/env bash
# Fetches cudnn-frontend's headers (header-only) from PyPI's nvidia-cudnn-frontend into DEST/include: the wheel's
# include/ folder, or the source archive's where pip finds no wheel. `make deps` fetches the pinned version
# into third_party/cudnn-frontend; `bash scripts/fetch_cudnn_frontend.sh 1.32.0 third_party/cudnn-frontend-new`
# fetches the second one that `make bench-attention` compares with it. Needs network and python3 -m pip.
# Usage: fetch_cudnn_frontend.sh VERSION DEST    (exit 1 when DEST/include/cudnn_frontend.h is not there after)
set -u
[ $# = 2 ] || { echo "usage: fetch_cudnn_frontend.sh VERSION DEST" >&2; exit 2; }
version=$1 dest=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
     -d "$tmp" "nvidia-cudnn-frontend==$version" >/dev/null 2>&1 ||
   python3 -m pip download -q --no-deps --no-binary :all: -d "$tmp" \
     "nvidia-cudnn-frontend==$version" >/dev/null 2>&1; then
  mkdir -p "$dest"
  for f in "$tmp"/*; do
    case "$f" in
      *.whl) python3 -c "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); [z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith('include/')]" "$f" "$dest" ;;
      *.tar.gz) tar -xzf "$f" -C "$tmp" && cp -r "$tmp"/nvidia*cudnn*frontend*/include "$dest/" ;;
    esac
  done
fi
[ -f "$dest/include/cudnn_frontend.h" ]
