#!/usr/bin/env bash
# The cuDNN the build uses: the newest cuDNN 9 present, from
#   the system: the first cudnn_version.h of CUDNN_INCS with the first libcudnn.so.9 of CUDNN_LIBS (the
#     Makefile's INC_DIRS and LIB_DIRS, passed in: CUDA_HOME's include/ and lib64/ or lib/, then /usr, /usr/local);
#   pip: the nvidia/cudnn package (include/ + lib/) of each interpreter of CUDNN_PYTHONS (default python3), e.g.
#     the nvidia-cudnn-cu13 that PyTorch installs.
# Prints "VERSION INCLUDE_DIR LIB_DIR" (VERSION as cudnnGetVersion: 91900 = 9.19.0) of the newest; the system
# on a tie; nothing when none is found. --list prints every candidate, one a line, the chosen one marked '*'.
# --loaded BINARY prints the folder BINARY loads libcudnn.so.9 from as the dynamic linker resolves it now (ldd;
# LD_LIBRARY_PATH counts), nothing when it does not resolve.
# Why newest: later cuDNNs carry faster attention kernels (9.19's deterministic SDPA backward is 4% faster than
# 9.14's at GPT-1.5B: docs/performance.md), and a pip cuDNN is often newer than the system's.
set -u
if [ "${1:-}" = --loaded ]; then
  ldd "${2:?usage: find_cudnn.sh --loaded BINARY}" 2>/dev/null |
    sed -n 's|.*libcudnn.so.9 => \(.*\)/libcudnn.so.9 .*|\1|p'
  exit 0
fi
incs=${CUDNN_INCS:-/usr/local/cuda/include /usr/include/x86_64-linux-gnu /usr/include /usr/local/include}
libs=${CUDNN_LIBS:-/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/local/lib}
pythons=${CUDNN_PYTHONS:-python3}

version_of() {  # include dir -> 91900, or nothing when its cudnn_version.h is not a cuDNN 9
  local h=$1/cudnn_version.h major minor patch
  [ -f "$h" ] || return 1
  major=$(sed -n 's/^#define CUDNN_MAJOR *\([0-9]*\).*/\1/p' "$h")
  minor=$(sed -n 's/^#define CUDNN_MINOR *\([0-9]*\).*/\1/p' "$h")
  patch=$(sed -n 's/^#define CUDNN_PATCHLEVEL *\([0-9]*\).*/\1/p' "$h")
  [ "$major" = 9 ] && [ -n "$minor" ] && [ -n "$patch" ] || return 1
  echo $((major * 10000 + minor * 100 + patch))
}

candidates=()  # "VERSION INCLUDE LIB SOURCE"
sys_inc="" sys_lib=""
for d in $incs; do [ -f "$d/cudnn_version.h" ] && { sys_inc=$d; break; }; done
for d in $libs; do [ -e "$d/libcudnn.so.9" ] && { sys_lib=$d; break; }; done
if [ -n "$sys_inc" ] && [ -n "$sys_lib" ] && v=$(version_of "$sys_inc"); then
  candidates+=("$v $sys_inc $sys_lib system")
fi
for py in $pythons; do
  command -v "$py" > /dev/null 2>&1 || continue
  pkg=$("$py" -c "import importlib.util as u; s = u.find_spec('nvidia.cudnn'); print(list(s.submodule_search_locations)[0])" \
        2> /dev/null) || continue
  [ -n "$pkg" ] && [ -e "$pkg/lib/libcudnn.so.9" ] && v=$(version_of "$pkg/include") || continue
  candidates+=("$v $pkg/include $pkg/lib pip($py)")
done

best=""
for c in "${candidates[@]}"; do
  [ -z "$best" ] || [ "${c%% *}" -gt "${best%% *}" ] && best=$c
done
if [ "${1:-}" = --list ]; then
  for c in "${candidates[@]}"; do
    read -r v i l src <<< "$c"
    mark=" "; [ "$c" = "$best" ] && mark="*"
    echo "$mark cuDNN $((v / 10000)).$((v / 100 % 100)).$((v % 100)) ($src): $i, $l"
  done
elif [ -n "$best" ]; then
  read -r v i l _ <<< "$best"
  echo "$v $i $l"
fi
