import base64


def load_tiktoken_bpe(path):
    """tiktoken's ranks format: base64 token, space, rank (one per line)."""
    ranks = {}
    for line in open(path, "rb").read().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
