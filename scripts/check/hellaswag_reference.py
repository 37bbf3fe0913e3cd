#!/usr/bin/env python3
"""Scores a HellaSwag file with the PyTorch reference GPT and checks train_gpt's --eval-hellaswag-dump against it.

    python3 scripts/check/hellaswag_reference.py --model model.safetensors --data hs.bin --dump dump.txt \\
        [--acc 0.275 --acc-norm 0.3 --examples 40]

--model is a seed-layout export (train_gpt --export ... --export-format seed), loaded into
scripts/reference_gpt.py's GPT as scripts/check/check_export.py does, with every weight rounded to bfloat16 (the
trainer's forward reads bf16 copies of its FP32 weights) and then run in float64 on the CPU. Each row,
context + ending, is run alone and unpadded; its rows, scored positions, sums, means and choices are built
here from the file's tokens (not from llmc/formats/hellaswag's layout), with llm.c's rule: the ending's
token losses summed (acc) and averaged (acc_norm), the lowest wins, the first on ties.

Checks (each failure is one line; exit status 1 if any, 0 if none, 2 for a usage error):
  - the dump has every example once, with the file's label, and means that are its sums over the ending's
    token count;
  - every sum and mean is within the bf16 tolerance (below) of the reference's;
  - where the trainer's margin between its best and second-best ending exceeds the two endings' tolerances,
    the reference picks the same ending (acc and acc_norm separately); at least --min-decided examples
    must be decided so, else the comparison could not tell a wrong choice;
  - --acc/--acc-norm/--examples (the trainer's train.jsonl record), when given, are the dump's own counts.
The functions (rows_of, reference_scores, compare) take any token-loss function: test/host_hellaswag_reference.sh
checks them against the trainer's scorer with a made-up model, without torch. The model needs torch and
safetensors.
"""
import argparse
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # check_export
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data"))
from prepare_hellaswag import ENDINGS, decode_file  # noqa: E402

# Tolerance of a summed ending loss, |trainer - reference| <= REL_TOL * |reference| + ABS_TOL_PER_TOKEN * n:
# the trainer's forward stores ~23 tensors in bf16 on the way to a token's logits in a 2-layer model
# (embedding sum; per block LN, qkv, attention, projection, residual, LN, fc, GELU, fc-proj, residual; final
# LN; logits), each rounded to 8 significant bits (2^-8 relative at most). A token loss lse(z) - z_t carries
# the relative error of the logits: in quadrature (independent roundings) sqrt(23) x 2^-8 = 1.9%, which the
# model reference test's measured 0.6% normwise logit error sits below. 2^-5 = 3.1% of the sum leaves room
# for roundings that line up, and 2^-6 nats per token covers tokens whose loss is near 0 (their error is
# the logits' absolute one, 2^-8 x a few nats). A mean's tolerance is its sum's over n. A bug moves a sum by
# whole token losses (1 to 5 nats here): another row, a scored range shifted by one, a wrong example.
REL_TOL = 2.0**-5
ABS_TOL_PER_TOKEN = 2.0**-6


class Usage(Exception):
    """A usage or input error: one line, exit status 2."""


def read_set(path):
    """[(label, context, [ending] * 4)] of a HellaSwag file (prepare_hellaswag.py's format)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        return decode_file(data)[1]
    except OSError as e:
        raise Usage(f"cannot read '{path}': {e.strerror}")
    except (ValueError, struct.error) as e:
        raise Usage(f"'{path}': not a HellaSwag file ({e})")


def rows_of(context, ending):
    """A row's inputs, targets and scored positions. The row is context + ending (L tokens); position t
    reads tokens[:t+1] and predicts tokens[t+1], so the ending's tokens are predicted at C-1 .. L-2."""
    tokens = list(context) + list(ending)
    return tokens[:-1], tokens[1:], range(len(context) - 1, len(tokens) - 1)


def first_min(values):
    return min(range(len(values)), key=lambda i: values[i])  # min() keeps the first of equal keys


def reference_scores(examples, token_losses):
    """Per example (sums, means, choice by sum, choice by mean); token_losses(inputs, targets) -> losses."""
    out = []
    for _, context, endings in examples:
        sums, means = [], []
        for ending in endings:
            inputs, targets, scored = rows_of(context, ending)
            losses = token_losses(inputs, targets)
            s = math.fsum(losses[t] for t in scored)
            sums.append(s)
            means.append(s / len(scored))
        out.append((sums, means, first_min(sums), first_min(means)))
    return out


def read_dump(path):
    """{index: (label, sums, means, choice_sum, choice_mean)} of a --eval-hellaswag-dump file."""
    dump = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                v = line.split()
                if len(v) != 4 + 2 * ENDINGS:
                    raise Usage(f"'{path}' line {n}: {len(v)} fields, expected {4 + 2 * ENDINGS}")
                index = int(v[0])
                if index in dump:
                    raise Usage(f"'{path}' line {n}: example {index} a second time")
                dump[index] = (int(v[1]), [float(x) for x in v[2:6]], [float(x) for x in v[6:10]], int(v[10]),
                               int(v[11]))
    except OSError as e:
        raise Usage(f"cannot read '{path}': {e.strerror}")
    except ValueError as e:
        raise Usage(f"'{path}': not a dump ({e})")
    return dump


def check_choice(what, i, values, tols, choice, ref_choice, failures):
    """True if the trainer's margin decides the example (then the reference must agree)."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    best, second = order[0], order[1]
    if values[choice] > values[best]:
        failures.append(f"example {i}: {what} choice {choice} is not the dump's lowest ({best})")
    if values[second] - values[best] <= tols[best] + tols[second]:
        return False
    if ref_choice != choice:
        failures.append(f"example {i}: {what} choice {choice} (margin {values[second] - values[best]:.4g}, "
                        f"tolerance {tols[best] + tols[second]:.4g}), the reference chooses {ref_choice}")
    return True


def compare_example(i, example, got, ref, rel, abs_tok, stats, failures):
    label, context, endings = example
    g_label, g_sums, g_means, g_cs, g_cm = got
    r_sums, r_means, r_cs, r_cm = ref
    if g_label != label:
        failures.append(f"example {i}: label {g_label} in the dump, {label} in the file")
    n = [len(e) for e in endings]
    tols = [rel * abs(r_sums[k]) + abs_tok * n[k] for k in range(ENDINGS)]
    for k in range(ENDINGS):
        if abs(g_means[k] * n[k] - g_sums[k]) > 1e-7 * max(1.0, abs(g_sums[k])):
            failures.append(f"example {i} ending {k}: mean {g_means[k]:.9g} x {n[k]} tokens is not the sum "
                            f"{g_sums[k]:.9g}")
        for what, g, r, t in (("sum", g_sums[k], r_sums[k], tols[k]), ("mean", g_means[k], r_means[k],
                                                                          tols[k] / n[k])):
            stats["worst"] = max(stats["worst"], abs(g - r) / t)
            if abs(g - r) > t:
                failures.append(f"example {i} ending {k}: {what} {g:.9g}, reference {r:.9g} (|diff| "
                                f"{abs(g - r):.3g} > tolerance {t:.3g})")
    stats["decided_sum"] += check_choice("acc", i, g_sums, tols, g_cs, r_cs, failures)
    stats["decided_mean"] += check_choice("acc_norm", i, g_means, [t / m for t, m in zip(tols, n)], g_cm, r_cm,
                                          failures)
    stats["acc"] += g_cs == label
    stats["acc_norm"] += g_cm == label
    stats["ref_acc"] += r_cs == label
    stats["ref_acc_norm"] += r_cm == label


def compare(examples, dump, ref, rel=REL_TOL, abs_tok=ABS_TOL_PER_TOKEN, min_decided=5, reported=None):
    """(failures, stats): the checks of the module's docstring. reported: {acc, acc_norm, examples} or None."""
    failures = []
    stats = dict(worst=0.0, decided_sum=0, decided_mean=0, acc=0, acc_norm=0, ref_acc=0, ref_acc_norm=0)
    missing = [i for i in range(len(examples)) if i not in dump]
    extra = sorted(i for i in dump if not 0 <= i < len(examples))
    if missing or extra:
        failures.append(f"the dump lacks examples {missing[:5]} and has unknown ones {extra[:5]} "
                        f"({len(dump)} lines, {len(examples)} examples)")
    for i, example in enumerate(examples):
        if i in dump:
            compare_example(i, example, dump[i], ref[i], rel, abs_tok, stats, failures)
    for what in ("decided_sum", "decided_mean"):
        if stats[what] < min(min_decided, len(examples)):
            failures.append(f"only {stats[what]} examples have a {what[8:]} margin above the tolerance (need "
                            f"{min_decided}): the comparison cannot tell choices apart (train longer)")
    n = len(examples)
    for key, value in (reported or {}).items():
        own = n if key == "examples" else stats[key] / n
        if value is not None and abs(value - own) > 1e-8 * max(1.0, abs(own)):
            failures.append(f"the trainer reports {key} {value:.9g}, its dump gives {own:.9g}")
    return failures, stats


def torch_token_losses(model_path):
    """The reference model's token-loss function (float64, bf16-rounded weights, CPU)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        raise Usage(f"needs torch ({e})")
    from check_export import seed_model

    model, _, max_t = seed_model(model_path, None, None)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).to(p.dtype))
    model = model.to(torch.float64).eval()

    def token_losses(inputs, targets):
        if len(inputs) > max_t:
            raise Usage(f"a row of {len(inputs)} positions is longer than the model's {max_t}")
        with torch.no_grad():
            logits = model(torch.tensor([inputs]))[0]
            return F.cross_entropy(logits, torch.tensor(targets), reduction="none").tolist()

    return token_losses


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="seed-layout .safetensors export of the trained model")
    p.add_argument("--data", required=True, help="the HellaSwag file train_gpt scored (--eval-hellaswag)")
    p.add_argument("--dump", required=True, help="train_gpt's --eval-hellaswag-dump file")
    p.add_argument("--acc", type=float, help="the trainer's reported acc (train.jsonl)")
    p.add_argument("--acc-norm", type=float, help="the trainer's reported acc_norm")
    p.add_argument("--examples", type=int, help="the trainer's reported example count")
    p.add_argument("--min-decided", type=int, default=5, help="examples whose choice must be decided")
    args = p.parse_args(argv)
    examples = read_set(args.data)
    dump = read_dump(args.dump)
    ref = reference_scores(examples, torch_token_losses(args.model))
    reported = dict(acc=args.acc, acc_norm=args.acc_norm, examples=args.examples)
    failures, s = compare(examples, dump, ref, min_decided=args.min_decided, reported=reported)
    for f in failures[:20]:
        print(f"  {f}")
    if len(failures) > 20:
        print(f"  ... and {len(failures) - 20} more")
    n = len(examples)
    print(f"{n} examples: largest loss difference {s['worst']:.3f} of its tolerance; choices decided by the "
          f"margin: acc {s['decided_sum']}, acc_norm {s['decided_mean']}; trainer acc {s['acc'] / n:.4f} "
          f"acc_norm {s['acc_norm'] / n:.4f}, reference acc {s['ref_acc'] / n:.4f} acc_norm "
          f"{s['ref_acc_norm'] / n:.4f}; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Usage as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
