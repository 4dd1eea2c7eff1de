"""The README's per-operation table: products and vector operations at the shapes of BERT-Large,
BERT-Base, ViT-B/16, GPT-2 small, Conformer-medium, EfficientNet and ResNet-50, priced by
`ipusim price`. Each product pass is checked against poplibs' estimators for the same plan,
recomputed by poplibs_estimators.py (written apart from sim/pricing).

    price_table.py IPUSIM README      check the estimators and the README's table
    price_table.py IPUSIM --markdown  print the table for the README
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poplibs_estimators as est  # noqa: E402

TILE_MEMORY = 638976  # bow: 624 KB a tile

PRODUCTS = [
    ("BERT-Large feed-forward in (1,024 tokens)", ["matmul", "1024x1024x4096"]),
    ("BERT-Large feed-forward out", ["matmul", "1024x4096x1024"]),
    ("BERT-Large QKV projection", ["matmul", "1024x1024x3072"]),
    ("BERT-Large attention scores (2 x 16 heads, 512 tokens)", ["matmul", "512x64x512", "--count", "32"]),
    ("BERT-Base feed-forward in (32 x 128 tokens)", ["matmul", "4096x768x3072"]),
    ("ViT-B/16 feed-forward in (4 x 197 tokens)", ["matmul", "788x768x3072"]),
    ("ViT-B/16 attention scores (4 x 12 heads)", ["matmul", "197x64x197", "--count", "48"]),
    ("GPT-2 small feed-forward in (4 x 256 tokens)", ["matmul", "1024x768x3072"]),
    ("Conformer-medium feed-forward in (4 x 304 frames)", ["matmul", "1216x256x1024"]),
    ("Conformer-medium 256 x 256 projection", ["matmul", "1216x256x256"]),
    ("Conformer-medium attention scores (4 x 4 heads)", ["matmul", "304x64x304", "--count", "16"]),
    ("EfficientNet grouped 3x3, 16 a group, 24x24", ["conv", "--field", "24x24", "--kernel", "3x3", "--in", "192", "--out", "192", "--groups", "12", "--batch", "4"]),
    ("EfficientNet grouped 5x5, 16 a group, 12x12", ["conv", "--field", "12x12", "--kernel", "5x5", "--in", "672", "--out", "672", "--groups", "42", "--batch", "4"]),
    ("EfficientNet grouped 3x3, 16 a group, 48x48", ["conv", "--field", "48x48", "--kernel", "3x3", "--in", "96", "--out", "96", "--groups", "6", "--batch", "4"]),
    ("EfficientNet 1x1, 24x24, 192 -> 32", ["conv", "--field", "24x24", "--in", "192", "--out", "32", "--batch", "4"]),
    ("EfficientNet 1x1, 12x12, 112 -> 672", ["conv", "--field", "12x12", "--in", "112", "--out", "672", "--batch", "4"]),
    ("Conformer depthwise conv1d, kernel 15", ["conv", "--field", "1x304", "--kernel", "1x15", "--in", "256", "--out", "256", "--groups", "256", "--batch", "4"]),
    ("ResNet-50 first conv, 3 channels, 7x7 stride 2", ["conv", "--field", "224x224", "--kernel", "7x7", "--in", "3", "--out", "64", "--stride", "2", "--batch", "4"]),
    ("Conformer subsampling, 1 channel, 3x3 stride 2", ["conv", "--field", "1216x80", "--kernel", "3x3", "--in", "1", "--out", "256", "--stride", "2", "--batch", "1"]),
]

VECTORS = [
    ("BERT-Large layer norm", ["layer_norm", "1024x1024"]),
    ("BERT-Large softmax (32 x 512 rows)", ["softmax", "16384x512"]),
    ("BERT-Base layer norm", ["layer_norm", "4096x768"]),
    ("ViT-B/16 softmax", ["softmax", "9456x197"]),
    ("Conformer-medium layer norm", ["layer_norm", "1216x256"]),
    ("Conformer-medium swish (feed-forward)", ["swish", "1216x1024"]),
    ("EfficientNet group norm (32 groups of 24x24x6)", ["group_norm", "128x3456"]),
    ("GPT-2 small GELU", ["gelu", "1024x3072"]),
]


def price(ipusim, args):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "p.json")
        kind = args[0]
        command = [ipusim, "price"] + (["vector"] + args if kind not in ("matmul", "conv") else args)
        subprocess.run(command + ["--json", out], check=True, capture_output=True)
        with open(out) as f:
            return json.load(f)


def product_rows(ipusim):
    rows = []
    for label, args in PRODUCTS:
        report = price(ipusim, args)
        for p in report["passes"]:
            ours = p["cycles"]
            theirs = est.plan_cycles(p, False, True, TILE_MEMORY)
            split = p["split"]
            theirs_total = split["serial"] * sum(theirs.values()) + ours["transform"]
            rows.append({
                "label": label, "pass": p["pass"], "vertex": p["vertex"],
                "split": "%d/%d/%d/%d" % (split["groups"], split["field"], split["in_chans"], split["out_chans"])
                + (" x %d serial" % split["serial"] if split["serial"] > 1 else ""),
                "ours": ours["total"], "theirs": theirs_total, "parts": (ours, theirs),
                "tflops": p["tflops"]})
    return rows


def vector_rows(ipusim):
    rows = []
    for label, args in VECTORS:
        report = price(ipusim, args)
        for pass_name in ("forward", "backward"):
            sets = report[pass_name]
            rows.append({"label": label, "pass": pass_name, "sets": len(sets),
                         "cycles": sum(s["cycles"] for s in sets)})
    return rows


def markdown(ipusim):
    lines = ["| operation | pass | vertex | split g/f/i/o | ipusim cycles | poplibs estimators | TFLOPS |",
             "|---|---|---|---|---:|---:|---:|"]
    for r in product_rows(ipusim):
        lines.append("| %s | %s | %s | %s | %s | %s | %.1f |" % (
            r["label"], r["pass"], r["vertex"], r["split"], f"{r['ours']:,}", f"{r['theirs']:,}", r["tflops"]))
    lines += ["", "| vector operation | pass | compute sets | ipusim cycles |", "|---|---|---:|---:|"]
    for r in vector_rows(ipusim):
        lines.append("| %s | %s | %d | %s |" % (r["label"], r["pass"], r["sets"], f"{r['cycles']:,}"))
    return "\n".join(lines) + "\n"


def check(ipusim, readme):
    failures = []
    for r in product_rows(ipusim):
        ours, theirs = r["parts"]
        for part, value in theirs.items():
            if ours[part] != value:
                failures.append(f"{r['label']}, {r['pass']}: {part} ipusim {ours[part]}, estimators {value}")
    table = markdown(ipusim)
    with open(readme) as f:
        if table not in f.read():
            failures.append("the README's per-operation table differs from `price_table.py --markdown`")
    for failure in failures:
        print(failure)
    print(f"{len(PRODUCTS) * 3} product passes and {len(VECTORS) * 2} vector passes; "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[2] == "--markdown":
        sys.stdout.write(markdown(sys.argv[1]))
    else:
        sys.exit(check(sys.argv[1], sys.argv[2]))
