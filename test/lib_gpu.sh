# shellcheck shell=bash
# Helpers sourced by the GPU test scripts (test/gpu_*.sh) and scripts/bench/bench_scaling.sh. Not a test itself.
source "$(dirname "${BASH_SOURCE[0]}")/lib_report.sh"  # pass, fail, skip

# losses and grad norms of a train.jsonl, one "step loss norm" line per training step (exact float text)
losses() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "train": print(r["step"], repr(r["loss"]), repr(r["grad_norm"]))' "$1"; }

# A free port P whose P+1 is free too (the torchrun-style rendezvous listens on MASTER_PORT+1).
free_port() { python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        s.close(); t.close()'; }
