"""Wall time of the commands that read finished runs: `sim report`, `sim ls` and `sim compare`.

    python benchmarks/read_commands.py [-n 1e6] [--rounds 7] [--old PATH] [--figures]

Plays a greedy and a random run of N games of seed 0 (once, into a
temporary folder), then times each command in a fresh process, round after
round: `sim report` of the greedy run, `sim report` of both (compared game
by game), `sim compare` of both and `sim ls` of the folder. Such commands
cost mostly their start-up (imports), which every call pays. With `--old`
PATH (a checkout of an earlier commit), each round times that code too, put
first on PYTHONPATH, alternating with this one; its output must be the same.
With `--figures`, also `sim report` of both runs with `--png DIR` and with
`--html FILE` (matplotlib's drawing), each version writing its own files,
which must hold the same bytes. Prints the median and the range of each, in
seconds.
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


def checkout_env(code: Path) -> dict[str, str]:
    """This process's environment with the package of `code` (a checkout) first on the import path."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])))


def timed(argv: list[str], code: Path, cwd: Path) -> tuple[float, str]:
    """Seconds of `python -m sim ARGV` with the package of `code` first on the import path, and its output."""
    env = checkout_env(code)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sim", *argv], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sim {' '.join(argv)} failed ({code}): {r.stderr.strip()}")
    return seconds, r.stdout


def _files(folder: Path) -> tuple:
    """(name, bytes) of each file under `folder`, by name: what a command wrote there. A page's line saying
    when and by which command it was made is left out: it differs from one call to the next."""
    def content(f: Path) -> bytes:
        data = f.read_bytes()
        if f.suffix == ".html":
            data = b"\n".join(line for line in data.split(b"\n") if not line.startswith(b'<p class="meta">'))
        return data

    return tuple(sorted((str(f.relative_to(folder)), content(f)) for f in folder.rglob("*") if f.is_file()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6", help="games of each run (default 1e6)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed alternately")
    parser.add_argument("--figures", action="store_true", help="also time report --png and --html of both runs")
    a = parser.parse_args()
    versions = {"this": ROOT} | ({"old": a.old.resolve()} if a.old else {})
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"  # cwd is the temporary folder: no checkout's package is found there first
        for policy in ("greedy", "random"):
            timed(["run", "--policy", policy, "-n", a.n, "--out", str(runs / policy), "-q"], ROOT, Path(tmp))
        both = [str(runs / "greedy"), str(runs / "random")]
        commands = {"report": ["report", both[0]], "report of both": ["report", *both], "compare": ["compare", *both],
                    "ls": ["ls", str(runs)]}
        if a.figures:  # each version writes into a folder of its own under figures/<version>/
            commands |= {"report --png": ["report", *both, "--png", "{out}/png", "-q"],
                         "report --html": ["report", *both, "--html", "{out}/page.html", "-q"]}
        seconds = {(name, v): [] for name in commands for v in versions}
        for _ in range(a.rounds):
            for name, argv in commands.items():
                outputs = {}
                writes = any("{out}" in arg for arg in argv)
                for v, code in versions.items():
                    out = Path(tmp) / "figures" / v
                    s, printed = timed([arg.format(out=out) for arg in argv], code, Path(tmp))
                    outputs[v] = (printed, _files(out) if writes else ())
                    seconds[name, v].append(s)
                if len(set(outputs.values())) > 1:
                    sys.exit(f"sim {name}: the versions print different output or write different files")
    print(f"fresh processes, {a.rounds} rounds, runs of {a.n} games; median (least .. most) in seconds")
    for name in commands:
        cells = [f"{v} {statistics.median(seconds[name, v]):.2f} ({min(seconds[name, v]):.2f} .. "
                 f"{max(seconds[name, v]):.2f})" for v in versions]
        ratio = (f"; this / old {statistics.median(seconds[name, 'this']) / statistics.median(seconds[name, 'old']):.2f}x"
                 if a.old else "")
        print(f"  {name:>15}: " + ", ".join(cells) + ratio)


if __name__ == "__main__":
    main()
