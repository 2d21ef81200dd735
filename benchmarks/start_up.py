"""What a small `sim run` costs besides its games: wall time of the whole command, and the part after its summary.

    python benchmarks/start_up.py [--policy greedy] [-n 1000] [--rounds 9] [--old PATH]

Times `sim run --policy P -n N -w 1 -q` in fresh processes, its numba cache
filled first: the games take milliseconds, so the wall time is the
command's start-up (imports, loading the compiled engine) and its exit.
"After summary" is the time from the summary's last line to the process's
end: Python's shutdown. With `--old` PATH (a checkout of an earlier
commit), each round times that code too, put first on PYTHONPATH,
alternating with this one. Prints the median and the range of each, in
seconds.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from read_commands import checkout_env  # benchmarks/read_commands.py

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], code: Path, cwd: Path) -> tuple[float, float]:
    """(seconds of `python -m sim ARGV`, seconds from its last line of output to its end), with the package of
    `code` first on the import path."""
    env = dict(checkout_env(code), PYTHONUNBUFFERED="1")  # each line as it is printed, not all at exit
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sim", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    last = t0
    for _ in proc.stdout:
        last = time.perf_counter()
    err = proc.stderr.read()
    proc.wait()
    end = time.perf_counter()
    if proc.returncode != 0:
        sys.exit(f"sim {' '.join(argv)} failed ({code}): {err.strip()}")
    return end - t0, end - last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="greedy")
    parser.add_argument("-n", default="1000", help="games (default 1000)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--old", type=Path, help="a checkout of an earlier commit, timed alternately")
    a = parser.parse_args()
    versions = {"this": ROOT} | ({"old": a.old.resolve()} if a.old else {})
    with tempfile.TemporaryDirectory() as tmp:  # cwd: no checkout's package is found there first
        argv = ["run", "--policy", a.policy, "-n", a.n, "-w", "1", "-q", "--force", "--out", str(Path(tmp) / "r")]
        for code in versions.values():  # each checkout's numba cache filled, not timed
            timed(argv, code, Path(tmp))
        seconds = {v: ([], []) for v in versions}
        for _ in range(a.rounds):
            for v, code in versions.items():
                whole, after = timed(argv, code, Path(tmp))
                seconds[v][0].append(whole)
                seconds[v][1].append(after)
    print(f"sim run --policy {a.policy} -n {a.n} -w 1, fresh processes, {a.rounds} rounds; "
          "median (least .. most) in seconds")
    for v in versions:
        whole, after = seconds[v]
        print(f"  {v:>4}: whole {statistics.median(whole):.3f} ({min(whole):.3f} .. {max(whole):.3f}), "
              f"after summary {statistics.median(after):.3f} ({min(after):.3f} .. {max(after):.3f})")
    if a.old:
        print(f"  this / old (whole, medians): "
              f"{statistics.median(seconds['this'][0]) / statistics.median(seconds['old'][0]):.2f}x")


if __name__ == "__main__":
    main()
