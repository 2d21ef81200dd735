"""Wall time of the commands that read finished runs: `sim report`, `sim ls` and `sim compare`.

    python benchmarks/read_commands.py [-n 1e6] [--rounds 7] [--old PATH]

Plays a greedy and a random run of N games of seed 0 (once, into a
temporary folder), then times each command in a fresh process, round after
round: `sim report` of the greedy run, `sim report` of both (compared game
by game), `sim compare` of both and `sim ls` of the folder. Such commands
cost mostly their start-up (imports), which every call pays. With `--old`
PATH (a checkout of an earlier commit), each round times that code too, put
first on PYTHONPATH, alternating with this one; its output must be the same.
Prints the median and the range of each, in seconds.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], code: Path, cwd: Path) -> tuple[float, str]:
    """Seconds of `python -m sim ARGV` with the package of `code` first on the import path, and its output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sim", *argv], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sim {' '.join(argv)} failed ({code}): {r.stderr.strip()}")
    return seconds, r.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6", help="games of each run (default 1e6)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed alternately")
    a = parser.parse_args()
    versions = {"this": ROOT} | ({"old": a.old.resolve()} if a.old else {})
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"  # cwd is the temporary folder: no checkout's package is found there first
        for policy in ("greedy", "random"):
            timed(["run", "--policy", policy, "-n", a.n, "--out", str(runs / policy), "-q"], ROOT, Path(tmp))
        commands = {"report": ["report", str(runs / "greedy")],
                    "report of both": ["report", str(runs / "greedy"), str(runs / "random")],
                    "compare": ["compare", str(runs / "greedy"), str(runs / "random")],
                    "ls": ["ls", str(runs)]}
        seconds = {(name, v): [] for name in commands for v in versions}
        for _ in range(a.rounds):
            for name, argv in commands.items():
                outputs = {}
                for v, code in versions.items():
                    s, outputs[v] = timed(argv, code, Path(tmp))
                    seconds[name, v].append(s)
                if len(set(outputs.values())) > 1:
                    sys.exit(f"sim {name}: the versions print different output")
    print(f"fresh processes, {a.rounds} rounds, runs of {a.n} games; median (least .. most) in seconds")
    for name in commands:
        cells = [f"{v} {statistics.median(seconds[name, v]):.2f} ({min(seconds[name, v]):.2f} .. "
                 f"{max(seconds[name, v]):.2f})" for v in versions]
        ratio = (f"; this / old {statistics.median(seconds[name, 'this']) / statistics.median(seconds[name, 'old']):.2f}x"
                 if a.old else "")
        print(f"  {name:>15}: " + ", ".join(cells) + ratio)


if __name__ == "__main__":
    main()
