#!/usr/bin/env python3
"""Turn documents (text, JSONL or Parquet files) into train/val token shards for train_gpt (llm.c's format).

Inputs, in the order given; each argument is a file, a directory or a glob:
    NAME.jsonl    one JSON object per line, the document in its --text-field (default "text"); blank lines skipped
    NAME.parquet  one document per row, in the string column --text-field (needs pyarrow: pip install pyarrow)
    any other     a text file (UTF-8), one document; a binary file (a NUL byte, a compressed or archive
                  format, or mostly bytes that are not text) is refused, and so is UTF-16 or UTF-32 text
                  (named by its byte-order mark: convert it with iconv)
    a directory   every file under it (recursively, sorted by path; names starting with '.' skipped); its
                  files that are not text are left out (one warning line counts them), not refused
    a glob        the matching files, sorted ('data/*.parquet', quoted so the shell leaves it; '**' recurses),
                  as a directory's
Text and JSONL files may be gzip-compressed (NAME.gz, e.g. Debian's changelog.gz): they are read decompressed.
Every input must be a regular file (a FIFO or a device is refused before it is opened, so nothing blocks).

Documents: with --tokenizer gpt2 each document starts with <|endoftext|> (50256), as llm.c does; the bytes
tokenizer has no such token, so its documents follow each other as they are. A JSONL or Parquet document gives
exactly the tokens of a text file holding the same text. Tokenizing runs in --workers processes; the output
does not depend on their number.

Shard format: a header of 256 little-endian int32 ([0] magic 20240520, [1] version 1, [2] token count,
the rest zero) followed by that many uint16 token ids.

The documents' tokens are concatenated in input order; the last --val-fraction of the tokens becomes the
validation split (the tail, so it is text the model never trains on), the rest the training split. Each
split is cut into shards of at most --shard-tokens tokens, of near-equal size (more than 10,000 shard files in
all is refused as a --shard-tokens mistake):

    <out-dir>/<prefix>_train_000000.bin, <prefix>_train_000001.bin, ...
    <out-dir>/<prefix>_val_000000.bin, ...

Next to the shards it writes <out-dir>/tokenizer.bin, the vocabulary train_gpt decodes samples with
(--tokenizer FILE; format in llmc/formats/tokenizer.h), all integers little-endian:
    8 bytes "GPTTOK1\0", uint32 kind (0 bytes, 1 gpt2-bpe), uint32 vocabulary size n,
    uint32 eot id (0xFFFFFFFF: none), then n entries of (uint32 length, that many bytes) for ids 0..n-1.

Tokenizers:
    bytes  UTF-8 bytes, vocabulary 256 (no dependencies)           -> train_gpt --vocab 256
    gpt2   GPT-2 BPE via tiktoken, vocabulary 50257                -> train_gpt --vocab 50304 (padded)
           (tiktoken downloads its BPE files once; when it cannot, GPT-2's ranks are read from the tiktoken-format
           file that `make deps` fetches, third_party/gpt2-bpe/gpt2.tiktoken (whisper/assets/gpt2.tiktoken of
           PyPI's openai-whisper sources), or from $GPT2_RANKS; --gpt2-ranks FILE reads them without trying)

Example:
    python3 scripts/data/prepare_data.py --tokenizer bytes --out-dir data --prefix kjv kjv.txt
    python3 scripts/data/prepare_data.py --out-dir data/fw 'fineweb/*.parquet'
    ./train_gpt --model 124m --vocab 256 --train-data 'data/kjv_train_*.bin' --val-data 'data/kjv_val_*.bin'

Every error is one line on stderr, the last one, with a non-zero exit status; a bad input stops it before
any shard is written.
Standard library only (tiktoken for --tokenizer gpt2, pyarrow for .parquet, tqdm for a nicer progress bar).
"""
import argparse
import collections
import glob
import gzip
import json
import math
import multiprocessing
import os
import re
import signal
import stat
import struct
import sys
import tempfile
import time
import zlib
from array import array
from typing import NamedTuple

MAGIC = 20240520
VERSION = 1
HEADER_INTS = 256
MAX_SHARD_TOKENS = 2**31 - 1  # the token count is an int32
MAX_SHARDS = 10_000  # more files than this is a --shard-tokens mistake (llm.c's 100B tokens: 1,000 shards)
DEFAULT_BT = 12 * 1024  # train_gpt's default --batch x --seq
CHUNK_BYTES = 1 << 22  # text per unit of work sent to a worker: big enough to amortize the transfer
PARQUET_BATCH_ROWS = 1024


class Fatal(Exception):
    """An error that ends the run: printed as one line "error: <message>", exit status 2."""


def die(msg):
    raise Fatal(msg)


def clip(text, limit):
    """text cut to at most `limit` characters at a word boundary, with "..." where it was cut."""
    if len(text) <= limit:
        return text
    head = text[:limit - 4]
    return (head[:head.rfind(" ")] if " " in head else head) + " ..."


def json_error(e):
    """A JSON parser's error with its position in the line: "Expecting ',' delimiter at column 17"."""
    msg, pos = getattr(e, "msg", None), getattr(e, "pos", None)
    return f"{msg} at column {pos + 1}" if msg and pos is not None else str(e)


# What a file that is not a regular file is (a FIFO would block the reader forever).
NOT_REGULAR = [(stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")]


def check_regular_file(path, flag=""):
    """Dies unless `path` is a regular file, looked at before it is opened: opening a FIFO blocks."""
    where = f"{flag} '{path}'" if flag else f"'{path}'"
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        die(f"cannot read {where}: {e.strerror}")
    for test, what in NOT_REGULAR:
        if test(mode):
            die(f"{where} is {what}, not a regular file")
    if not stat.S_ISREG(mode):
        die(f"{where} is not a regular file")


class HelpFormatter(argparse.HelpFormatter):
    """--help with each default said once: argparse's "(default: X)" only where the help does not say it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or not action.option_strings or action.default is None or action.default is False \
                or action.default == argparse.SUPPRESS:
            return text
        return text + " (default: %(default)s)"


TOKENIZER_FILE = "tokenizer.bin"
TOKENIZER_MAGIC = b"GPTTOK1\0"
TOKENIZER_KIND = {"bytes": 0, "gpt2": 1}
NO_EOT = 0xFFFFFFFF


def le_uint16(ids) -> bytes:
    """Token ids as little-endian uint16 bytes (the shards' layout)."""
    a = array("H", ids)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


class BytesTokenizer:
    name = "bytes"
    vocab_size = 256
    eot = None

    def token_bytes(self):
        return [bytes([i]) for i in range(256)]

    def encode_text(self, text: str) -> list:
        return list(text.encode("utf-8", "surrogatepass"))

    def pieces(self, data: bytes) -> list:
        """`data` cut into pieces that encode independently (any cut works for bytes)."""
        return [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]

    def encode_each(self, pieces) -> list:
        """The little-endian uint16 token bytes of each piece."""
        out = []
        for p in pieces:
            wide = bytearray(2 * len(p))  # each byte becomes a little-endian uint16: interleave zero bytes
            wide[0::2] = p
            out.append(bytes(wide))
        return out


class Gpt2Tokenizer:
    name = "gpt2"
    vocab_size = 50257
    chunk_chars = 1 << 20  # encode in ~1M-character pieces cut at line ends (bounded memory, batched)

    def __init__(self, threads=8, ranks_path=None):
        try:
            import tiktoken
        except ImportError:
            die("--tokenizer gpt2 needs the 'tiktoken' package (pip install tiktoken); "
                "or use --tokenizer bytes (no dependencies, vocabulary 256)")
        self.ranks_path = ranks_path
        if ranks_path:
            self.enc = self._offline_encoding(tiktoken, ranks_path)
        else:
            try:
                self.enc = tiktoken.get_encoding("gpt2")
            except Exception as e:  # the BPE files are downloaded on first use
                reason = str(e).splitlines()[0] if str(e) else ""
                why = f"{type(e).__name__}: {clip(reason, 200)}"
                fallback = default_ranks_path()
                if not os.path.isfile(fallback):
                    die(f"tiktoken could not load the gpt2 encoding ({why}); it needs network access once, or pass "
                        "--gpt2-ranks FILE (make deps fetches one), or use --tokenizer bytes")
                # the workers take the file too (ranks_path), so none of them tries the download again
                print(f"note: tiktoken could not download the gpt2 encoding ({type(e).__name__}): GPT-2's ranks "
                      f"from {fallback} instead", file=sys.stderr, flush=True)
                self.ranks_path = fallback
                self.enc = self._offline_encoding(tiktoken, fallback)
        self.eot = self.enc.eot_token
        self.threads = threads
        if self.enc.n_vocab != self.vocab_size:
            die(f"tiktoken's gpt2 encoding has {self.enc.n_vocab} tokens, expected {self.vocab_size}")

    @staticmethod
    def _offline_encoding(tiktoken, path):
        """GPT-2's encoding from a local ranks file in tiktoken's format (base64 token, rank per line; e.g. the
        gpt2.tiktoken that PyPI's openai-whisper package ships), with tiktoken's own GPT-2 split pattern."""
        try:
            from tiktoken.load import load_tiktoken_bpe
            ranks = load_tiktoken_bpe(path)
        except Exception as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            die(f"--gpt2-ranks '{path}': not a tiktoken ranks file ({clip(reason, 200)})")
        if len(ranks) != 50256:
            die(f"--gpt2-ranks '{path}': {len(ranks)} ranks, GPT-2 has 50256 (plus <|endoftext|>)")
        try:
            from tiktoken_ext.openai_public import r50k_pat_str as pattern
        except ImportError:  # tiktoken before 0.7: GPT-2's original pattern
            pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
        return tiktoken.Encoding(name="gpt2", pat_str=pattern, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": 50256})

    def token_bytes(self):
        return [self.enc.decode_single_token_bytes(i) for i in range(self.enc.n_vocab)]

    def encode_text(self, text: str) -> list:
        # "<|endoftext|>" in text is text; llm.c's enc.encode gives the same ids for text without it
        return self.enc.encode_ordinary(text)

    def pieces(self, data: bytes) -> list:
        """The document's text cut at line ends into pieces of at most chunk_chars characters."""
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
        return pieces

    def encode_each(self, pieces) -> list:
        """The little-endian uint16 token bytes of each piece (a batch over threads when there are several)."""
        if self.threads > 1 and len(pieces) > 1:
            ids = self.enc.encode_ordinary_batch(list(pieces), num_threads=self.threads)
        else:  # a worker process: no thread pool per call
            ids = [self.enc.encode_ordinary(p) for p in pieces]
        return [le_uint16(i) for i in ids]


def default_ranks_path():
    """The ranks file for --tokenizer gpt2 when tiktoken cannot download its own: $GPT2_RANKS, else the copy
    `make deps` fetches into this checkout's third_party/gpt2-bpe."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("GPT2_RANKS") or os.path.join(root, "third_party", "gpt2-bpe", "gpt2.tiktoken")


def make_tokenizer(name, threads=8, ranks_path=None):
    return BytesTokenizer() if name == "bytes" else Gpt2Tokenizer(threads, ranks_path)


# --- inputs ----------------------------------------------------------------------------------------------

class InputError(Exception):
    """A bad input file: its one-line message names the file (and the line or row)."""


def input_format(path):
    low = path.lower()
    low = low[:-3] if low.endswith(".gz") else low  # docs.jsonl.gz is JSONL
    return "jsonl" if low.endswith(".jsonl") else "parquet" if low.endswith(".parquet") else "text"


def walk_dir(top):
    """Every file under `top`, sorted by path; hidden files and directories skipped."""
    found = []
    for root, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, n) for n in names if not n.startswith(".")]
    return sorted(found)


class InputFile(NamedTuple):
    path: str
    format: str  # "text", "jsonl" or "parquet"
    found: bool  # found by walking a directory or expanding a glob (not named): skipped if it is not text


def expand_inputs(args):
    """The input files in order: files as given, directories walked, globs expanded."""
    files = []
    for a in args:
        if os.path.isdir(a):
            found = walk_dir(a)
            if not found:
                die(f"'{a}': a directory without files")
        elif os.path.exists(a):
            found = [a]
        elif any(c in a for c in "*?["):
            found = []
            for m in sorted(glob.glob(a, recursive=True)):
                found += walk_dir(m) if os.path.isdir(m) else [m]
            if not found:
                die(f"'{a}': no file matches")
        else:
            die(f"cannot read '{a}': No such file or directory")
        files += [InputFile(p, input_format(p), p != a) for p in found]
    for f in files:
        check_regular_file(f.path)
    return files


GZIP_MAGIC = b"\x1f\x8b"  # gzip-compressed inputs are read decompressed (Debian's changelog.gz, docs.jsonl.gz)
# Formats that are certainly not text, by their first bytes: a clearer message than "not text".
BINARY_MAGIC = [(b"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first"),
                (b"PK\x03\x04", "a zip archive"),
                (b"PAR1", "a Parquet file: give it the .parquet extension"),
                (b"\x7fELF", "an executable")]
# Control bytes that text does not hold (tab, line feed, vertical tab, form feed, carriage return, backspace
# and escape are fine); used to count the bytes of a sample that are not text.
TEXT_BYTES = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F or b in b"\t\n\v\f\r\b\x1b")
# Byte-order marks of the encodings that are not UTF-8 (UTF-32 first: its LE mark starts with UTF-16 LE's).
BOMS = [(b"\xff\xfe\x00\x00", "UTF-32 LE", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32 BE", "UTF-32"),
        (b"\xff\xfe", "UTF-16 LE", "UTF-16"), (b"\xfe\xff", "UTF-16 BE", "UTF-16")]


def encoding_error(path, data: bytes):
    """The error for a file in another Unicode encoding, by its byte-order mark (None for any other file)."""
    for bom, name, iconv in BOMS:
        if data.startswith(bom):
            return (f"'{path}' is {name} text (by its byte-order mark); inputs are UTF-8: convert it first, "
                    f"e.g. iconv -f {iconv} -t UTF-8 '{path}' > converted.txt")
    return None


def binary_reason(data: bytes):
    """Why `data` is not text (None if it is): a known binary format, a NUL byte, or more than 10% of the
    first 64 KiB being control bytes or invalid UTF-8 (text in another 8-bit encoding stays well below)."""
    for magic, what in BINARY_MAGIC:
        if data.startswith(magic):
            return what
    nul = data.find(b"\0")
    if nul >= 0:
        return f"a NUL byte at offset {nul:,}"
    sample = data[:1 << 16]
    control = len(sample.translate(None, TEXT_BYTES))
    invalid = sample.decode("utf-8", errors="replace").count("\ufffd") - sample.count(b"\xef\xbf\xbd")
    if sample and (control + invalid) * 10 > len(sample):
        return f"{100 * (control + invalid) // len(sample)}% of its first {len(sample):,} bytes are not text"
    return None


class Segment(NamedTuple):
    """A piece of one input file for a worker. kind "docs": items are documents (bytes or str); "jsonl":
    items are raw JSON lines, the first one numbered first_line; "pieces": items are consecutive pieces of
    one document (tokenizer.pieces), the first of which starts it when starts_doc."""
    path: str
    file: int  # index into the input files (per-file counts)
    kind: str
    items: list
    size: int  # payload bytes (characters for str pieces)
    weight: float  # the input file bytes it stands for (progress)
    last: bool  # the file's last segment
    first_line: int = 1
    starts_doc: bool = False


class NotText(InputError):
    """A file that is not text (binary): an error for a named input, skipped when a directory or glob found it."""


def gunzip(path, data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"'{path}': a damaged gzip file ({first_line(e)})")


def read_text_file(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror}")
    if data.startswith(GZIP_MAGIC):
        data = gunzip(path, data)
    if encoding_error(path, data):
        raise InputError(encoding_error(path, data))
    why = binary_reason(data)
    if why:
        raise NotText(f"'{path}' is not a text file ({why}); inputs are text (UTF-8), .jsonl or .parquet")
    return data


def text_segments(i, path, tok):
    """A text file: one document; a big one is cut into tokenizer pieces so that several workers share it."""
    data = read_text_file(path)
    file_bytes = os.path.getsize(path)  # the progress counts the file's bytes (compressed, for a .gz)
    if len(data) <= CHUNK_BYTES:
        yield Segment(path, i, "docs", [data], len(data), file_bytes, True)
        return
    pieces = tok.pieces(data)
    total = sum(len(p) for p in pieces)
    groups, group, size = [], [], 0
    for p in pieces:
        group.append(p)
        size += len(p)
        if size >= CHUNK_BYTES:
            groups.append((group, size))
            group, size = [], 0
    if group:
        groups.append((group, size))
    for k, (g, size) in enumerate(groups):
        yield Segment(path, i, "pieces", g, size, file_bytes * size / total, k == len(groups) - 1,
                      starts_doc=k == 0)


def jsonl_segments(i, path):
    """A JSONL file (gzip-compressed or not) in runs of lines of about CHUNK_BYTES (parsed by the workers); the
    last run may be empty. Each run's progress weight is the file bytes read for it."""
    lines, size, first, done = [], 0, 1, 0
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw) if gz else raw
            for n, line in enumerate(f, 1):
                if n == 1 and encoding_error(path, line):
                    raise InputError(encoding_error(path, line))
                lines.append(line)
                size += len(line)
                if size >= CHUNK_BYTES:
                    pos = raw.tell()
                    yield Segment(path, i, "jsonl", lines, size, pos - done, False, first_line=first)
                    lines, size, first, done = [], 0, n + 1, pos
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or first_line(e)}")
    except (EOFError, zlib.error) as e:
        raise InputError(f"'{path}': a damaged gzip file ({first_line(e)})")
    yield Segment(path, i, "jsonl", lines, size, os.path.getsize(path) - done, True, first_line=first)


def import_pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        die(".parquet inputs need the 'pyarrow' package (pip install pyarrow)")
    return pyarrow


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def open_parquet(path, field):
    """The Parquet file, checked to have a string column `field`."""
    pa = import_pyarrow()
    try:
        pf = pa.parquet.ParquetFile(path)
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or first_line(e)}")
    except pa.ArrowException as e:
        raise InputError(f"'{path}' is not a Parquet file ({first_line(e)})")
    schema = pf.schema_arrow
    if field not in schema.names:
        raise InputError(f"'{path}' has no column '{field}' (columns: {', '.join(schema.names[:8])}); "
                         "choose one with --text-field")
    t = schema.field(field).type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or
            getattr(pa.types, "is_string_view", lambda _: False)(t)):
        raise InputError(f"'{path}': column '{field}' holds {t}, not strings")
    return pf


def parquet_segments(i, path, field):
    """A Parquet file's column `field`, in runs of documents of about CHUNK_BYTES."""
    pa = import_pyarrow()
    pf = open_parquet(path, field)
    file_bytes, rows = os.path.getsize(path), max(1, pf.metadata.num_rows)
    docs, size, row = [], 0, 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[field]):
            for d in batch.column(0).to_pylist():
                if d is None:
                    raise InputError(f"'{path}': row {row + len(docs)}: '{field}' is null")
                docs.append(d)
                size += len(d)
            if size >= CHUNK_BYTES:
                yield Segment(path, i, "docs", docs, size, file_bytes * len(docs) / rows, False)
                row += len(docs)
                docs, size = [], 0
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"'{path}': read error after row {row:,} ({first_line(e)})")
    yield Segment(path, i, "docs", docs, size, file_bytes * len(docs) / rows, True)


def segments(files, tok, field, not_text):
    """Every input's segments in order; a text file that a directory or glob found and that is not text is
    left out, its error appended to `not_text`."""
    for i, f in enumerate(files):
        if f.format == "jsonl":
            yield from jsonl_segments(i, f.path)
        elif f.format == "parquet":
            yield from parquet_segments(i, f.path, field)
        else:
            try:
                yield from text_segments(i, f.path, tok)
            except NotText as e:
                if not f.found:
                    raise
                not_text.append(str(e))


def chunks(segs):
    """Segments grouped into units of work of about CHUNK_BYTES (many small files go together)."""
    chunk, size = [], 0
    try:
        for s in segs:
            chunk.append(s)
            size += s.size
            if size >= CHUNK_BYTES:
                yield chunk
                chunk, size = [], 0
    except InputError:  # the inputs before the bad one go first: an error of theirs is the one to report
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


# --- workers: segments -> tokens ---------------------------------------------------------------------------

_worker = {}  # the tokenizer and --text-field of this process


def init_worker(tok_name, ranks_path, field):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    _worker["tok"] = make_tokenizer(tok_name, threads=1, ranks_path=ranks_path)
    _worker["field"] = field


def jsonl_documents(seg, field):
    docs = []
    for n, line in enumerate(seg.items, seg.first_line):
        if not line.strip():
            continue
        where = f"'{seg.path}' line {n:,}"
        try:
            obj = json.loads(line)
        except UnicodeDecodeError:
            raise InputError(f"{where}: not UTF-8")
        except ValueError as e:
            raise InputError(f"{where}: not JSON ({json_error(e)})")
        if not isinstance(obj, dict):
            raise InputError(f"{where}: not a JSON object")
        if field not in obj:
            raise InputError(f"{where}: no field '{field}' (fields: {', '.join(list(obj)[:8])}); "
                             "choose one with --text-field")
        if not isinstance(obj[field], str):
            raise InputError(f"{where}: field '{field}' is {type(obj[field]).__name__}, not a string")
        docs.append(obj[field])
    return docs


def encode_segment(tok, field, seg):
    """(little-endian uint16 token bytes, documents started) of one segment."""
    eot = le_uint16([tok.eot]) if tok.eot is not None else b""
    if seg.kind == "pieces":
        return (eot if seg.starts_doc else b"") + b"".join(tok.encode_each(seg.items)), int(seg.starts_doc)
    docs = jsonl_documents(seg, field) if seg.kind == "jsonl" else seg.items
    # as bytes, so a document takes exactly the path of a text file with its text
    pieces = [tok.pieces(d if isinstance(d, bytes) else d.encode("utf-8", "surrogatepass")) for d in docs]
    encoded = iter(tok.encode_each([p for doc in pieces for p in doc]))  # one batch for the whole segment
    parts = []
    for doc in pieces:
        parts.append(eot)
        parts += [next(encoded) for _ in doc]
    return b"".join(parts), len(docs)


def encode_chunk(chunk):
    """(token bytes of the chunk, [(documents, tokens)] per segment), in a worker process."""
    out = [encode_segment(_worker["tok"], _worker["field"], s) for s in chunk]
    return b"".join(t for t, _ in out), [(d, len(t) // 2) for t, d in out]


def encoded_chunks(files, tok, field, workers, not_text):
    """(chunk, its encode_chunk result) in input order, encoded by `workers` processes (a bounded window of
    chunks in flight, so memory stays bounded); workers == 1: in this process."""
    work = chunks(segments(files, tok, field, not_text))
    if workers == 1:
        _worker.update(tok=tok, field=field)
        for c in work:
            yield c, encode_chunk(c)
        return
    # spawn, not fork: the main process may run threads (tqdm's monitor, tiktoken's), which fork copies badly
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers, initializer=init_worker,
                    initargs=(tok.name, getattr(tok, "ranks_path", None), field))
    pending = collections.deque()
    try:
        try:
            for c in work:
                pending.append((c, pool.apply_async(encode_chunk, (c,))))
                if len(pending) > 2 * workers:
                    c0, r = pending.popleft()
                    yield c0, r.get()
        except InputError:  # a later input's error: an earlier one's, if any, comes first (as with 1 worker)
            while pending:
                c0, r = pending.popleft()
                yield c0, r.get()
            raise
        while pending:
            c0, r = pending.popleft()
            yield c0, r.get()
    finally:
        pool.terminate()
        pool.join()


class Progress:
    """Input MB, documents and tokens so far, on stderr: a tqdm bar when tqdm is installed (on a terminal),
    else one line redrawn on a terminal; lines printed through log() go to stdout above it."""

    def __init__(self, total_bytes):
        self.total, self.done, self.docs, self.tokens = total_bytes, 0.0, 0, 0
        self.t0 = self.drawn = time.time()
        self.tty = sys.stderr.isatty()
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc="tokenizing", file=sys.stderr,
                            disable=None, dynamic_ncols=True)
        except ImportError:
            self.bar = None

    def update(self, nbytes, docs, tokens):
        self.done += nbytes
        self.docs += docs
        self.tokens += tokens
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.docs:,} docs, {self.tokens:,} tokens", refresh=False)
            self.bar.update(nbytes)
        elif self.tty and time.time() - self.drawn >= 0.5:
            self.drawn = time.time()
            sys.stderr.write("\r\033[K" + self.line())
            sys.stderr.flush()

    def line(self):
        secs = max(time.time() - self.t0, 1e-9)
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        return (f"tokenizing: {self.done / 1e6:,.1f} of {self.total / 1e6:,.1f} MB{pct}, {self.docs:,} docs, "
                f"{self.tokens:,} tokens, {self.done / 1e6 / secs:,.1f} MB/s")

    def log(self, text):
        if self.bar is not None:
            self.bar.write(text, file=sys.stdout)
            return
        if self.tty:
            sys.stderr.write("\r\033[K")
        print(text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.tty:
            sys.stderr.write("\r\033[K")
        return time.time() - self.t0


def tokenize_inputs(files, tok, field, workers, spool):
    """Tokenizes every input into `spool` (little-endian uint16); one progress line (redrawn on a terminal),
    then a summary line, whatever the number of files."""
    sizes = [os.path.getsize(f.path) for f in files]
    workers = max(1, min(workers, math.ceil(sum(sizes) / CHUNK_BYTES)))  # small inputs: no process start-up
    docs = tokens = 0
    not_text = []  # files a directory or glob found that are not text: left out
    progress = Progress(sum(sizes))
    try:
        for chunk, (token_bytes, counts) in encoded_chunks(files, tok, field, workers, not_text):
            spool.write(token_bytes)
            docs += sum(d for d, _ in counts)
            tokens += len(token_bytes) // 2
            progress.update(sum(s.weight for s in chunk), sum(d for d, _ in counts), len(token_bytes) // 2)
    finally:
        secs = progress.close()
    mb = sum(sizes) / 1e6
    read = len(files) - len(not_text)
    print(f"tokenized {read:,} file(s): {docs:,} documents, {tokens:,} tokens, {mb:,.1f} MB in "
          f"{secs:.1f} s ({mb / max(secs, 1e-9):,.1f} MB/s, {workers} worker(s))")
    if not_text:
        print(f"warning: left out {len(not_text):,} file(s) of the directory or glob inputs that are not text, "
              f"e.g. {not_text[0]}", file=sys.stderr)
    return spool.tell() // 2


# --- output ------------------------------------------------------------------------------------------------

def split_evenly(n, max_per_shard):
    """Boundaries of ceil(n / max_per_shard) near-equal consecutive pieces of range(n)."""
    k = max(1, math.ceil(n / max_per_shard))
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def shard_header(n_tokens) -> bytes:
    header = [0] * HEADER_INTS
    header[0], header[1], header[2] = MAGIC, VERSION, n_tokens
    return struct.pack(f"<{HEADER_INTS}i", *header)


def write_shard(path, token_bytes: bytes):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(shard_header(len(token_bytes) // 2))
        f.write(token_bytes)
    os.replace(tmp, path)  # readers never see a half-written shard


def ids_below(token_bytes: bytes, vocab_size) -> bool:
    """Every little-endian uint16 id in token_bytes is < vocab_size (bytes operations, no loop per token)."""
    top, limit = (vocab_size - 1) >> 8, (vocab_size - 1) & 0xFF  # the largest id's high and low byte
    high = token_bytes[1::2]
    if high.translate(None, bytes(range(top + 1))):
        return False  # a high byte above top
    if limit == 0xFF:
        return True
    low, i = token_bytes[0::2], high.find(top)
    while i >= 0:  # ids with high byte == top: their low byte must be <= limit
        if low[i] > limit:
            return False
        i = high.find(top, i + 1)
    return True


def check_shard(path, token_bytes: bytes, vocab_size):
    """Reads the shard back and compares it with what was meant to be written."""
    with open(path, "rb") as f:
        data = f.read()
    ok = data[:4 * HEADER_INTS] == shard_header(len(token_bytes) // 2) and data[4 * HEADER_INTS:] == token_bytes
    if not ok or not ids_below(token_bytes, vocab_size):
        die(f"{path}: read-back check failed")


def read_spool(spool, lo, hi) -> bytes:
    spool.seek(2 * lo)
    return spool.read(2 * (hi - lo))


def check_shard_count(n_train, n_val, shard_tokens):
    """Dies before writing when --shard-tokens would cut the splits into more than MAX_SHARDS files."""
    count = sum(math.ceil(k / shard_tokens) for k in (n_train, n_val))
    if count > MAX_SHARDS:
        least = math.ceil(max(n_train, n_val) / (MAX_SHARDS // 2))
        die(f"--shard-tokens {shard_tokens:,} would cut {n_train + n_val:,} tokens into {count:,} shard files "
            f"(at most {MAX_SHARDS:,}): pass --shard-tokens {least:,} or more (the default: 100,000,000)")


def write_splits(spool, n, n_train, out_dir, prefix, vocab_size, shard_tokens):
    """Writes the train and val shards; returns {split: [shard sizes]} and the paths written."""
    summary, written = {}, set()
    for split, lo, hi in (("train", 0, n_train), ("val", n_train, n)):
        if hi <= lo:
            continue
        sizes = []
        for i, (a, b) in enumerate(split_evenly(hi - lo, shard_tokens)):
            path = os.path.join(out_dir, f"{prefix}_{split}_{i:06d}.bin")
            shard = read_spool(spool, lo + a, lo + b)
            write_shard(path, shard)
            check_shard(path, shard, vocab_size)
            print(f"wrote {path}: {len(shard) // 2:,} tokens")
            sizes.append(len(shard) // 2)
            written.add(os.path.abspath(path))
        summary[split] = sizes
    return summary, written


def warn_stale_shards(out_dir, prefix, written):
    """Shards of an earlier, bigger run under the same prefix would be picked up by the --train-data glob."""
    stale = sorted(p for p in glob.glob(os.path.join(glob.escape(out_dir), glob.escape(prefix) + "_*_*.bin"))
                   if re.fullmatch(r"(train|val)_\d{6}\.bin", os.path.basename(p)[len(prefix) + 1:])
                   and os.path.abspath(p) not in written)
    if stale:
        print(f"warning: {out_dir} also holds {len(stale)} shard(s) this run did not write (e.g. {stale[0]}), "
              "which the shard globs match: remove them", file=sys.stderr)


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


def print_usage_hints(tok, summary, out_dir, prefix):
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
    glob_hint = os.path.join(out_dir, f"{prefix}_train_*.bin")
    val_hint = f" --val-data '{os.path.join(out_dir, prefix + '_val_*.bin')}'" if "val" in summary else ""
    print(f"use: --vocab {vocab_arg} --train-data '{glob_hint}'{val_hint}")


# --- main --------------------------------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other error (argparse prints the usage first)
        die(f"{message} (see --help)")


def default_workers():
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def parse_args(argv):
    p = Parser(description="Tokenize text, JSONL or Parquet documents into train/val shards for train_gpt "
                           "(llm.c shard format).",
               formatter_class=HelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="text (UTF-8), .jsonl or .parquet files, directories or quoted globs, in order")
    p.add_argument("--out-dir", required=True, help="directory for the shards (created if missing)")
    p.add_argument("--prefix", default=None,
                   help="shard name prefix (default: the first input's name without extension)")
    p.add_argument("--val-fraction", type=float, default=0.05,
                   help="fraction of the tokens (the tail) for validation; 0: no validation split")
    p.add_argument("--shard-tokens", type=int, default=100_000_000, help="maximum tokens per shard")
    p.add_argument("--tokenizer", choices=["gpt2", "bytes"], default="gpt2",
                   help="gpt2: GPT-2 BPE via tiktoken; bytes: UTF-8 bytes (vocabulary 256)")
    p.add_argument("--gpt2-ranks", default=None, metavar="FILE",
                   help="gpt2 without network: GPT-2's BPE ranks from this tiktoken-format file (e.g. "
                        "whisper/assets/gpt2.tiktoken of PyPI's openai-whisper) instead of tiktoken's download")
    p.add_argument("--text-field", default="text", help="the document's field (.jsonl) or column (.parquet)")
    p.add_argument("--workers", type=int, default=None,
                   help="tokenizer processes (the output does not depend on it); default: the CPUs, at most 8, "
                        "for gpt2, and 1 for bytes, whose tokenizing costs less than handing work to a process")
    args = p.parse_args(argv)
    if not 0.0 <= args.val_fraction < 1.0:
        die(f"--val-fraction must be in [0, 1), got {args.val_fraction}")
    if not 1 <= args.shard_tokens <= MAX_SHARD_TOKENS:
        die(f"--shard-tokens must be in [1, {MAX_SHARD_TOKENS}], got {args.shard_tokens}")
    if args.gpt2_ranks is not None and args.tokenizer != "gpt2":
        die("--gpt2-ranks applies to --tokenizer gpt2")
    if args.gpt2_ranks is not None and not os.path.isfile(args.gpt2_ranks):
        die(f"--gpt2-ranks '{args.gpt2_ranks}': no such file")
    if args.workers is None:
        args.workers = default_workers() if args.tokenizer == "gpt2" else 1
    if args.workers < 1:
        die(f"--workers must be at least 1, got {args.workers}")
    return args


def default_prefix(first_arg, files):
    """The first input's name: a directory's, a glob's folder ('lib/*.py' -> 'lib', not its first file's), else
    the file's without its extension; characters other than letters, digits, '_', '.', '-' become '_'."""
    if os.path.isdir(first_arg):
        name = os.path.basename(os.path.normpath(first_arg))
    elif any(c in first_arg for c in "*?[") and not os.path.exists(first_arg):
        parts = os.path.normpath(first_arg).split(os.sep)
        fixed = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts))
        name = parts[fixed - 1] if fixed > 0 else ""
    else:
        name = os.path.splitext(os.path.basename(files[0].path))[0]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "data"


def missing_dirs(path):
    """The folders that os.makedirs(path) would create, deepest first."""
    out, path = [], os.path.abspath(path)
    while not os.path.exists(path):
        out.append(path)
        path = os.path.dirname(path)
    return out


def remove_if_empty(dirs):
    """Removes the folders this run created (deepest first) that are still empty: a failed run leaves none."""
    for d in dirs:
        try:
            os.rmdir(d)
        except OSError:
            return


def open_spool(out_dir):
    """A scratch file for the tokens in out_dir (removed when closed): checks early that out_dir is writable."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        return tempfile.TemporaryFile(dir=out_dir, prefix=".prepare_data_")
    except OSError as e:
        die(f"--out-dir '{out_dir}': cannot write there: {e.strerror}")


def main(argv):
    args = parse_args(argv)
    files = expand_inputs(args.inputs)
    if any(f.format == "parquet" for f in files):
        import_pyarrow()  # before any work
    prefix = args.prefix if args.prefix is not None else default_prefix(args.inputs[0], files)
    tok = make_tokenizer(args.tokenizer, ranks_path=args.gpt2_ranks)
    created = missing_dirs(args.out_dir)
    try:
        write_outputs(args, files, tok, prefix)
    except BaseException:
        remove_if_empty(created)
        raise


def write_outputs(args, files, tok, prefix):
    """Tokenizes the inputs, writes the shards and tokenizer.bin into --out-dir and prints how to use them."""
    with open_spool(args.out_dir) as spool:
        n = tokenize_inputs(files, tok, args.text_field, args.workers, spool)
        n_val = round(n * args.val_fraction)
        if args.val_fraction > 0:
            n_val = max(n_val, 1)
        n_train = n - n_val
        if n_train < 2:
            die(f"only {n} tokens in total: not enough to train on")
        check_shard_count(n_train, n_val, args.shard_tokens)
        summary, written = write_splits(spool, n, n_train, args.out_dir, prefix, tok.vocab_size,
                                        args.shard_tokens)
    warn_stale_shards(args.out_dir, prefix, written)
    tok_path = write_tokenizer(args.out_dir, tok)
    print(f"wrote {tok_path}: tokenizer {tok.name}, {tok.vocab_size} entries (train_gpt --tokenizer {tok_path})")
    print_usage_hints(tok, summary, args.out_dir, prefix)


def run(argv):
    """main() with every error as one line "error: ..." on stderr, the last one (no traceback); exit status 2,
    130 on Ctrl-C."""
    try:
        main(argv)
        return 0
    except KeyboardInterrupt:
        return print_error("interrupted", 130)
    except (Fatal, InputError) as e:
        return print_error(str(e))
    except OSError as e:
        return print_error(f"'{e.filename}': {e.strerror}" if e.filename else first_line(e))
    except MemoryError:
        return print_error("out of memory")
    except Exception as e:
        return print_error(f"unexpected {type(e).__name__}: {first_line(e)} (a bug: please report it)")


def print_error(msg, status=2):
    sys.stdout.flush()
    print(f"error: {msg}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
