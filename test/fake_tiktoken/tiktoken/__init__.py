"""A stand-in for tiktoken in the host tests (PYTHONPATH=test/fake_tiktoken): GPT-2's vocabulary size and
<|endoftext|> id, one id per word or run of spaces (a hash), so no network, tiktoken or BPE files are needed.
FAKE_TIKTOKEN_OFFLINE=1 makes get_encoding fail as tiktoken does without network ("long": a long message)."""
import os
import re
import zlib


class _Encoding:
    n_vocab, eot_token = 50257, 50256

    def encode_ordinary(self, text):
        return [zlib.crc32(w.encode("utf-8", "surrogatepass")) % 50256 for w in re.findall(r"\s+|\S+", text)]

    def encode_ordinary_batch(self, texts, num_threads=8):
        return [self.encode_ordinary(t) for t in texts]

    def decode_single_token_bytes(self, i):
        return b"<|endoftext|>" if i == self.eot_token else b"t%d" % i


class Encoding(_Encoding):
    """Built from ranks (--gpt2-ranks): the same ids as the downloaded encoding."""

    def __init__(self, name, pat_str, mergeable_ranks, special_tokens):
        assert name == "gpt2" and special_tokens == {"<|endoftext|>": 50256} and len(mergeable_ranks) == 50256


def get_encoding(name):
    if os.environ.get("FAKE_TIKTOKEN_OFFLINE"):
        if os.environ["FAKE_TIKTOKEN_OFFLINE"] == "long":  # words ending in 'x': a cut inside one shows
            raise ConnectionError(" ".join(f"w{i}x" for i in range(200)))
        raise ConnectionError("could not reach openaipublic.blob.core.windows.net")
    return _Encoding()
