#!/usr/bin/python3
"""The README's example outputs are what ipusim prints today. Every `$ ipusim ...` (or
`$ build/tools/ipusim/ipusim ...`) line in a code block runs in a scratch folder that sees the
repository's configs and tests (one folder per code block), and each line the README shows under it
must be a line of the output. A shown line with "..." stands for any text there (a prefix and
a suffix); a line that is only "..." stands for lines left out. Examples that need files the
README only names, a full disk or another program running, or that print wall time, are in
SKIPPED with the reason.

    tests/tools/readme_examples_test.py IPUSIM README
"""
import os
import shlex
import subprocess
import sys
import tempfile

IPUSIM = os.path.abspath(sys.argv[1])
README = os.path.abspath(sys.argv[2])
ROOT = os.path.dirname(README)

# A command containing one of these is not run, for the reason given.
SKIPPED = [
    ("ipusim train", "prints wall time; tests/tools/train_test.cpp checks its figures"),
    ("ipusim import", "reads model files the README only names"),
    ("run t.json", "runs a config a skipped import wrote"),
    ("run gpt.json", "runs a config a skipped import wrote"),
    ("--measured bert_measured.csv", "reads a measurement file the README only names"),
    ("--measured big.csv", "reads a measurement file the README only describes; tests/tools/calibrate_test.cpp writes it"),
    ("merge -o", "merges shard files the README only names"),
    ("--shard", "writes the shards of a run on two machines"),
    ("--merge a.csv", "merges those shards"),
    ("/mnt/full", "needs a full disk"),
    (" > /dev/full", "redirects the output this test reads; tests/tools/output_test.cpp checks it"),
    (" >&-", "closes the output this test reads; tests/tools/output_test.cpp checks it"),
    ("configs/x.json", "names a config that does not exist"),
    ("out/html", "shows the error without a folder"),
    ("--gac 200000000", "needs a file system with less free space than the trace it refuses; "
     "tests/sim/report/trace_proto_test.cpp checks the message"),
]
# Whole commands not run: the lock example needs another sweep writing the same file.
SKIPPED_EXACTLY = {
    "ipusim sweep configs/tf1_mnist_2ipu.json -o gac.csv "
    "--vary pipeline.gradient_accumulation_count=8,16,32",
}


def code_blocks(lines):
    block = None
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                yield block
                block = None
        elif block is not None:
            block.append((number, line))


def commands(block):
    """(line number, command, the output lines shown under it) for each `$ ` line."""
    i = 0
    while i < len(block):
        number, line = block[i]
        if not line.startswith("$ "):
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + block[i][1].strip()
        i += 1
        shown = []
        while i < len(block) and not block[i][1].startswith("$ "):
            shown.append(block[i][1].rstrip())
            i += 1
        yield number, command, shown


def skipped(command):
    return command in SKIPPED_EXACTLY or any(part in command for part, _ in SKIPPED)


def matches(shown, output):
    if "..." not in shown:
        return shown in output
    prefix, _, suffix = shown.partition("...")
    return any(line.startswith(prefix) and line.endswith(suffix) for line in output)


def run(command, folder):
    """The output lines of an ipusim command; None for a command of another program."""
    words = shlex.split(command.split(" 2>/dev/null")[0])
    if words[0] not in ("ipusim", "build/tools/ipusim/ipusim"):
        return None
    result = subprocess.run([IPUSIM] + words[1:], cwd=folder, capture_output=True, text=True,
                            timeout=600)
    text = result.stdout if " 2>/dev/null" in command else result.stdout + result.stderr
    return [line.rstrip() for line in text.splitlines()]


def main():
    lines = open(README, encoding="utf-8").read().splitlines()
    failures = []
    checked = 0
    for block in code_blocks(lines):
        # Each block in a folder of its own: one example's outputs are not the next one's.
        with tempfile.TemporaryDirectory() as folder:
            for name in ("configs", "tests"):
                os.symlink(os.path.join(ROOT, name), os.path.join(folder, name))
            for number, command, shown in commands(block):
                if skipped(command):
                    continue
                output = run(command, folder)
                if output is None:
                    continue
                checked += 1
                for line in shown:
                    if line.strip() in ("", "...") or matches(line, output):
                        continue
                    failures.append(f"README.md:{number}: `{command}` no longer prints:\n  {line}")
    if failures:
        sys.exit("\n".join(failures) + f"\n{len(failures)} stale line(s) in {checked} examples")
    print(f"readme: the {checked} example commands print what the README shows")


main()
