#!/usr/bin/env python3
"""Turn HellaSwag's validation set (the official JSONL) into the compact binary eval file train_gpt reads.

    python3 scripts/data/prepare_hellaswag.py                  # downloads hellaswag_val.jsonl, GPT-2 BPE (tiktoken)
    python3 scripts/data/prepare_hellaswag.py --input hellaswag_val.jsonl --tokenizer bytes --out data/hs_bytes.bin
    python3 scripts/data/prepare_hellaswag.py --input hellaswag_val.jsonl --gpt2-ranks gpt2.tiktoken   # no network

Each JSONL line is one example with "ctx" (the context), "endings" (4 strings) and "label" (the right one,
0..3); other fields are ignored. Without --input the file is downloaded from --url once, next to --out.
Rendering (llm.c's dev/data/hellaswag.py): the context is tokens(ctx) and ending i is tokens(" " + ending i),
a completion of the context. Tokenizers: gpt2 (tiktoken's GPT-2 BPE, vocabulary 50257; without network,
--gpt2-ranks FILE as in scripts/data/prepare_data.py) or bytes (UTF-8 bytes, vocabulary 256, no dependencies: for tests).

Output format (llmc/formats/hellaswag.h, the C++ reader), all integers little-endian: 8 bytes "HSWAG\\0\\0\\0",
uint32 version 1, uint32 vocabulary size, uint32 example count; per example uint32 label, uint32 context
length, 4 x uint32 ending lengths, then the uint16 tokens of the context and the 4 endings in order.

Every error is one line on stderr, the last one, with a non-zero exit status; no output file is written then.
"""
import json
import os
import struct
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prepare_data import (Fatal, HelpFormatter, Parser, check_regular_file, die, first_line, json_error,  # noqa: E402
                          make_tokenizer, print_error)

URL = "https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl"
MAGIC = b"HSWAG\0\0\0"
VERSION = 1
ENDINGS = 4


def download(url, path):
    """Fetches url into path (tmp + rename), unless path already exists."""
    if os.path.exists(path):
        print(f"using {path} (downloaded earlier)")
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
            f.write(r.read())
    except (urllib.error.URLError, OSError, ValueError) as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        reason = getattr(e, "reason", None) or first_line(e)
        die(f"cannot download {url} ({reason}); offline, fetch it elsewhere and pass --input FILE")
    os.replace(tmp, path)
    print(f"downloaded {url} -> {path}")


def parse_example(line, where):
    """(ctx, endings, label) of one JSONL line, checked."""
    try:
        ex = json.loads(line)
    except ValueError as e:
        die(f"{where}: not JSON ({json_error(e)})")
    if not isinstance(ex, dict):
        die(f"{where}: not a JSON object")
    for key in ("ctx", "endings", "label"):
        if key not in ex:
            die(f"{where}: no field '{key}' (a HellaSwag example has ctx, endings, label)")
    ctx, endings, label = ex["ctx"], ex["endings"], ex["label"]
    if not isinstance(ctx, str) or not ctx:
        die(f"{where}: 'ctx' must be a non-empty string")
    if not isinstance(endings, list) or len(endings) != ENDINGS or not all(isinstance(e, str) for e in endings):
        die(f"{where}: 'endings' must be a list of {ENDINGS} strings")
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < ENDINGS:
        die(f"{where}: 'label' must be an integer in [0, {ENDINGS}), got {label!r}")
    return ctx, endings, label


def render(tok, ctx, endings):
    """llm.c's rendering: tokens(ctx), then tokens(" " + ending) for each ending."""
    return tok.encode_text(ctx), [tok.encode_text(" " + e) for e in endings]


def read_examples(path, tok, limit):
    """[(label, context tokens, [ending tokens] * 4)] of the JSONL file (its first `limit`, 0: all)."""
    examples = []
    check_regular_file(path, "--input")
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                where = f"'{path}' line {n:,}"
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError:
                    die(f"{where}: not UTF-8")
                ctx, endings, label = parse_example(text, where)
                context, ends = render(tok, ctx, endings)
                if not context:
                    die(f"{where}: the context has no tokens")
                examples.append((label, context, ends))
                if limit and len(examples) == limit:
                    break
    except OSError as e:
        die(f"cannot read '{path}': {e.strerror}")
    if not examples:
        die(f"'{path}': no examples")
    return examples


def encode_file(examples, vocab_size) -> bytes:
    parts = [MAGIC, struct.pack("<III", VERSION, vocab_size, len(examples))]
    for label, context, ends in examples:
        parts.append(struct.pack("<6I", label, len(context), *(len(e) for e in ends)))
        tokens = context + [t for e in ends for t in e]
        parts.append(struct.pack(f"<{len(tokens)}H", *tokens))
    return b"".join(parts)


def decode_file(data: bytes):
    """(vocab size, examples) of a file's bytes: the format read back, for the write check."""
    if data[:8] != MAGIC:
        raise ValueError("bad magic")
    version, vocab, count = struct.unpack_from("<III", data, 8)
    pos, examples = 20, []
    for _ in range(count):
        label, c, *lens = struct.unpack_from("<6I", data, pos)
        pos += 24
        tokens = list(struct.unpack_from(f"<{c + sum(lens)}H", data, pos))
        pos += 2 * len(tokens)
        ends, at = [], c
        for n in lens:
            ends.append(tokens[at:at + n])
            at += n
        examples.append((label, tokens[:c], ends))
    if version != VERSION or pos != len(data):
        raise ValueError("bad version or length")
    return vocab, examples


def write_file(path, data: bytes, check):
    """Writes atomically (tmp + rename) and reads it back through check(bytes)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    with open(path, "rb") as f:
        back = f.read()
    if back != data or not check(back):
        die(f"{path}: read-back check failed")


def main(argv):
    p = Parser(description=__doc__.splitlines()[0], formatter_class=HelpFormatter)
    p.add_argument("--input", default=None, help="the HellaSwag JSONL (default: download --url next to --out)")
    p.add_argument("--url", default=URL, help="where to download the validation JSONL from")
    p.add_argument("--out", default=None, help="output file (default: data/hellaswag/hellaswag_val_<tokenizer>.bin)")
    p.add_argument("--tokenizer", choices=["gpt2", "bytes"], default="gpt2",
                   help="gpt2: GPT-2 BPE via tiktoken; bytes: UTF-8 bytes (vocabulary 256)")
    p.add_argument("--gpt2-ranks", default=None, metavar="FILE",
                   help="gpt2 without network: GPT-2's BPE ranks from this tiktoken-format file (e.g. "
                        "whisper/assets/gpt2.tiktoken of PyPI's openai-whisper) instead of tiktoken's download")
    p.add_argument("--limit", type=int, default=0, help="only the first N examples (0: all)")
    args = p.parse_args(argv)
    if args.limit < 0:
        die(f"--limit must be >= 0, got {args.limit}")
    if args.gpt2_ranks is not None and args.tokenizer != "gpt2":
        die("--gpt2-ranks applies to --tokenizer gpt2")
    if args.gpt2_ranks is not None:
        check_regular_file(args.gpt2_ranks, "--gpt2-ranks")
    out = args.out or os.path.join("data", "hellaswag", f"hellaswag_val_{args.tokenizer}.bin")
    tok = make_tokenizer(args.tokenizer, ranks_path=args.gpt2_ranks)
    src = args.input
    if src is None:
        src = os.path.join(os.path.dirname(out) or ".", "hellaswag_val.jsonl")
        download(args.url, src)
    examples = read_examples(src, tok, args.limit)
    data = encode_file(examples, tok.vocab_size)
    write_file(out, data, lambda back: decode_file(back) == (tok.vocab_size, examples))
    longest = max(len(c) + len(e) for _, c, ends in examples for e in ends)
    print(f"wrote {out}: {len(examples):,} examples, tokenizer {tok.name} (vocabulary {tok.vocab_size}), "
          f"{len(data):,} bytes; the longest row (context + ending) has {longest} tokens: scoring needs "
          f"--seq >= {longest - 1}")


def run(argv):
    try:
        main(argv)
        return 0
    except KeyboardInterrupt:
        return print_error("interrupted", 130)
    except Fatal as e:
        return print_error(str(e))
    except OSError as e:
        return print_error(f"'{e.filename}': {e.strerror}" if e.filename else first_line(e))
    except Exception as e:
        return print_error(f"unexpected {type(e).__name__}: {first_line(e)} (a bug: please report it)")


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
