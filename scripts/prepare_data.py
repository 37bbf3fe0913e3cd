#!/usr/bin/env python3
"""Turn text files into train/val token shards for train_gpt (llm.c's shard format).

Shard format: a header of 256 little-endian int32 ([0] magic 20240520, [1] version 1, [2] token count,
the rest zero) followed by that many uint16 token ids.

The input files are tokenized in order and concatenated; the last --val-fraction of the tokens becomes the
validation split (the tail, so it is text the model never trains on), the rest the training split. Each
split is cut into shards of at most --shard-tokens tokens, of near-equal size:

    <out-dir>/<prefix>_train_000000.bin, <prefix>_train_000001.bin, ...
    <out-dir>/<prefix>_val_000000.bin, ...

Next to the shards it writes <out-dir>/tokenizer.bin, the vocabulary train_gpt decodes samples with
(--tokenizer FILE; format in llmc/host/tokenizer.h), all integers little-endian:
    8 bytes "GPTTOK1\0", uint32 kind (0 bytes, 1 gpt2-bpe), uint32 vocabulary size n,
    uint32 eot id (0xFFFFFFFF: none), then n entries of (uint32 length, that many bytes) for ids 0..n-1.

Tokenizers:
    bytes  UTF-8 bytes, vocabulary 256 (no dependencies)           -> train_gpt --vocab 256
    gpt2   GPT-2 BPE via tiktoken, vocabulary 50257, each file starts with <|endoftext|> (50256)
                                                                   -> train_gpt --vocab 50304 (padded)

Example:
    python3 scripts/prepare_data.py --tokenizer bytes --out-dir data --prefix kjv kjv.txt
    ./train_gpt --model 124m --vocab 256 --train-data 'data/kjv_train_*.bin' --val-data 'data/kjv_val_*.bin'

Standard library only (tiktoken only for --tokenizer gpt2).
"""
import argparse
import math
import os
import re
import struct
import sys
from array import array

MAGIC = 20240520
VERSION = 1
HEADER_INTS = 256
MAX_SHARD_TOKENS = 2**31 - 1  # the token count is an int32
DEFAULT_BT = 12 * 1024  # train_gpt's default --batch x --seq


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


TOKENIZER_FILE = "tokenizer.bin"
TOKENIZER_MAGIC = b"GPTTOK1\0"
TOKENIZER_KIND = {"bytes": 0, "gpt2": 1}
NO_EOT = 0xFFFFFFFF


class BytesTokenizer:
    name = "bytes"
    vocab_size = 256
    eot = None

    def token_bytes(self):
        return [bytes([i]) for i in range(256)]

    def encode_file(self, data: bytes) -> array:
        wide = bytearray(2 * len(data))  # each byte becomes a uint16 (fast path: interleave zero bytes)
        wide[0 if sys.byteorder == "little" else 1::2] = data
        out = array("H")
        out.frombytes(bytes(wide))
        return out


class Gpt2Tokenizer:
    name = "gpt2"
    vocab_size = 50257
    chunk_chars = 1 << 20  # encode in ~1M-character pieces cut at line ends (bounded memory, batched)

    def __init__(self):
        try:
            import tiktoken
        except ImportError:
            die("--tokenizer gpt2 needs the 'tiktoken' package (pip install tiktoken); "
                "or use --tokenizer bytes (no dependencies, vocabulary 256)")
        try:
            self.enc = tiktoken.get_encoding("gpt2")
        except Exception as e:  # the BPE files are downloaded on first use
            die(f"tiktoken could not load the gpt2 encoding ({type(e).__name__}: {e}); "
                "it needs network access once, or use --tokenizer bytes")
        self.eot = self.enc.eot_token
        if self.enc.n_vocab != self.vocab_size:
            die(f"tiktoken's gpt2 encoding has {self.enc.n_vocab} tokens, expected {self.vocab_size}")

    def token_bytes(self):
        return [self.enc.decode_single_token_bytes(i) for i in range(self.enc.n_vocab)]

    def encode_file(self, data: bytes) -> array:
        text = data.decode("utf-8", errors="replace")
        pieces, start = [], 0
        while start < len(text):
            end = min(len(text), start + self.chunk_chars)
            if end < len(text):
                nl = text.rfind("\n", start, end)
                if nl > start:
                    end = nl + 1
            pieces.append(text[start:end])
            start = end
        out = array("H", [self.eot])
        for ids in self.enc.encode_ordinary_batch(pieces):
            out.extend(ids)
        return out


def split_evenly(n, max_per_shard):
    """Boundaries of ceil(n / max_per_shard) near-equal consecutive pieces of range(n)."""
    k = max(1, math.ceil(n / max_per_shard))
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def shard_bytes(tokens: array) -> bytes:
    header = [0] * HEADER_INTS
    header[0], header[1], header[2] = MAGIC, VERSION, len(tokens)
    if sys.byteorder != "little":
        tokens = array("H", tokens)
        tokens.byteswap()
    return struct.pack(f"<{HEADER_INTS}i", *header) + tokens.tobytes()


def write_shard(path, tokens: array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(shard_bytes(tokens))
    os.replace(tmp, path)  # readers never see a half-written shard


def check_shard(path, tokens: array, vocab_size):
    """Reads the shard back and compares it with what was meant to be written."""
    with open(path, "rb") as f:
        data = f.read()
    header = struct.unpack_from(f"<{HEADER_INTS}i", data, 0)
    n = header[2]
    ok = (header[0] == MAGIC and header[1] == VERSION and n == len(tokens)
          and len(data) == 4 * HEADER_INTS + 2 * n)
    back = array("H")
    back.frombytes(data[4 * HEADER_INTS:])
    if sys.byteorder != "little":
        back.byteswap()
    if not ok or back != tokens or (n and max(back) >= vocab_size):
        die(f"{path}: read-back check failed")


def tokenizer_bytes(tok) -> bytes:
    entries = tok.token_bytes()
    eot = NO_EOT if tok.eot is None else tok.eot
    parts = [TOKENIZER_MAGIC, struct.pack("<III", TOKENIZER_KIND[tok.name], len(entries), eot)]
    for b in entries:
        parts.append(struct.pack("<I", len(b)))
        parts.append(b)
    return b"".join(parts)


def write_tokenizer(out_dir, tok) -> str:
    """Writes <out_dir>/tokenizer.bin atomically (tmp + rename), reads it back; returns its path."""
    path = os.path.join(out_dir, TOKENIZER_FILE)
    data = tokenizer_bytes(tok)
    old = None
    try:
        with open(path, "rb") as f:
            old = f.read()
    except OSError:
        pass
    if old is not None and old != data:
        print(f"warning: replacing {path}, which held a different tokenizer (shards of another tokenizer "
              f"in {out_dir} no longer match it)", file=sys.stderr)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    with open(path, "rb") as f:
        if f.read() != data:
            die(f"{path}: read-back check failed")
    return path


def main():
    p = argparse.ArgumentParser(
        description="Tokenize text files into train/val shards for train_gpt (llm.c shard format).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE", help="text files (UTF-8), concatenated in order")
    p.add_argument("--out-dir", required=True, help="directory for the shards (created if missing)")
    p.add_argument("--prefix", default=None,
                   help="shard name prefix (default: the first input's name without extension)")
    p.add_argument("--val-fraction", type=float, default=0.05,
                   help="fraction of the tokens (the tail) for validation; 0: no validation split")
    p.add_argument("--shard-tokens", type=int, default=100_000_000, help="maximum tokens per shard")
    p.add_argument("--tokenizer", choices=["gpt2", "bytes"], default="gpt2",
                   help="gpt2: GPT-2 BPE via tiktoken; bytes: UTF-8 bytes (vocabulary 256)")
    args = p.parse_args()

    if not 0.0 <= args.val_fraction < 1.0:
        die(f"--val-fraction must be in [0, 1), got {args.val_fraction}")
    if not 1 <= args.shard_tokens <= MAX_SHARD_TOKENS:
        die(f"--shard-tokens must be in [1, {MAX_SHARD_TOKENS}], got {args.shard_tokens}")
    prefix = args.prefix
    if prefix is None:
        prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.splitext(os.path.basename(args.inputs[0]))[0]) or "data"

    tok = BytesTokenizer() if args.tokenizer == "bytes" else Gpt2Tokenizer()
    tokens = array("H")
    for path in args.inputs:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            die(f"cannot read '{path}': {e.strerror}")
        ids = tok.encode_file(data)
        print(f"{path}: {len(data):,} bytes -> {len(ids):,} tokens")
        tokens.extend(ids)

    n = len(tokens)
    n_val = round(n * args.val_fraction)
    if args.val_fraction > 0:
        n_val = max(n_val, 1)
    n_train = n - n_val
    if n_train < 2:
        die(f"only {n} tokens in total: not enough to train on")

    os.makedirs(args.out_dir, exist_ok=True)
    summary = {}
    for split, lo, hi in (("train", 0, n_train), ("val", n_train, n)):
        if hi <= lo:
            continue
        sizes = []
        for i, (a, b) in enumerate(split_evenly(hi - lo, args.shard_tokens)):
            path = os.path.join(args.out_dir, f"{prefix}_{split}_{i:06d}.bin")
            shard = tokens[lo + a:lo + b]
            write_shard(path, shard)
            check_shard(path, shard, tok.vocab_size)
            print(f"wrote {path}: {len(shard):,} tokens")
            sizes.append(len(shard))
        summary[split] = sizes

    tok_path = write_tokenizer(args.out_dir, tok)
    print(f"wrote {tok_path}: tokenizer {tok.name}, {tok.vocab_size} entries (train_gpt --tokenizer {tok_path})")

    vocab_arg = 128 * math.ceil(tok.vocab_size / 128)  # train_gpt needs a multiple of 16; llm.c pads to 128
    padded = f" (padded from {tok.vocab_size}; the extra ids never occur)" if vocab_arg != tok.vocab_size else ""
    print(f"tokenizer {tok.name}: vocabulary {tok.vocab_size}; pass --vocab {vocab_arg} to train_gpt{padded}")
    for split, sizes in summary.items():
        print(f"{split}: {sum(sizes):,} tokens in {len(sizes)} shard(s), smallest {min(sizes):,}")
    smallest = min(min(s) for s in summary.values())
    bt_max = smallest - 1
    print(f"each shard must hold at least B*T+1 tokens (x world size with several GPUs): "
          f"--batch x --seq <= {bt_max:,} here")
    if bt_max < DEFAULT_BT:
        print(f"warning: the smallest shard is below the default --batch 12 --seq 1024 "
              f"({DEFAULT_BT + 1:,} tokens): train with smaller -b/-t, or make bigger shards "
              f"(--val-fraction, --shard-tokens, more text)",
              file=sys.stderr)
    glob_hint = os.path.join(args.out_dir, f"{prefix}_train_*.bin")
    val_hint = f" --val-data '{os.path.join(args.out_dir, prefix + '_val_*.bin')}'" if "val" in summary else ""
    print(f"use: --vocab {vocab_arg} --train-data '{glob_hint}'{val_hint}")


if __name__ == "__main__":
    main()
