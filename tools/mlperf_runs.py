"""What tools/fit-mlperf and tools/fidelity-chart share: the measured runs (configs/mlperf/ and
configs/benchmarks/, each folder's measured.csv beside its configs) and a run of one of their
configs through ipusim."""

import csv
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLPERF = os.path.join(ROOT, "configs", "mlperf")
BENCHMARKS = os.path.join(ROOT, "configs", "benchmarks")


def ipusim_path(args):
    """The program a script runs: --ipusim PATH, or the release build's."""
    if "--ipusim" in args:
        return args[args.index("--ipusim") + 1]
    return os.path.join(ROOT, "build", "tools", "ipusim", "ipusim")


def measured_rows(folders=(MLPERF,)):
    """Each folder's measured.csv: id, config, measured, unit, source; `config` made a path
    relative to configs/mlperf/."""
    rows = []
    for folder in folders:
        with open(os.path.join(folder, "measured.csv")) as f:
            for row in csv.DictReader(f):
                row["config"] = os.path.relpath(os.path.join(folder, row["config"]), MLPERF)
                rows.append(row)
    return rows


def run_report(ipusim, config, overrides=()):
    """The JSON report of `ipusim run` on configs/mlperf/CONFIG with --set OVERRIDES."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "run.json")
        args = [ipusim, "run", os.path.join(MLPERF, config), "--no-numeric", "--quiet",
                "--json", out]
        for o in overrides:
            args += ["--set", o]
        subprocess.run(args, check=True, capture_output=True)
        with open(out) as f:
            return json.load(f)
