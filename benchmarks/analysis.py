"""What reading large runs costs: wall time and peak memory of `sim report`, `sim compare`, `sim ls` and
`sim replay --run` on a greedy and a random run of n games each.

    python benchmarks/analysis.py [-n 1e7] [--dir DIR] [--rounds 3]

Each command is a fresh process (warm compile cache); the least wall time of
`--rounds` and its peak resident set size are printed. The runs are played
first (`-w 2`) in DIR, a temporary folder unless given: with `--dir`, a later
call finds them complete and plays nothing, so code before and after a change
can be timed on the same runs.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRAPPER = """
import atexit, json, resource, runpy, sys
atexit.register(lambda: print("PEAK " + json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss), file=sys.stderr))
sys.argv = ["sim"] + sys.argv[1:]
runpy.run_module("sim", run_name="__main__")
"""


def sim(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak MiB) of one `sim` command."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sim {' '.join(args)} failed:\n{r.stderr}")
    peak = json.loads(next(line for line in r.stderr.splitlines() if line.startswith("PEAK "))[5:])
    return wall, peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e7", help="games per run (default 1e7)")
    parser.add_argument("--dir", help="where the runs are kept (default: a temporary folder)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = int(float(args.n))

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.dir or tmp)
        runs = []
        for policy in ("greedy", "random"):
            out = root / f"{policy}-n{n}"
            sim(["run", "--policy", policy, "-n", str(n), "-w", "2", "-q", "--out", str(out)])
            runs.append(str(out))
        commands = {
            "report": ["report", runs[0]],
            "compare": ["compare", *runs],
            "ls": ["ls", str(root)],
            "replay --run": ["replay", "--run", runs[0], "--game", str(n - 1)],
        }
        print(f"two runs of {n:,} games (greedy, random); least wall time of {args.rounds}, peak RSS")
        for name, command in commands.items():
            times = [sim(command) for _ in range(args.rounds)]
            print(f"  sim {name:<13} {min(t for t, _ in times):7.2f} s  {max(m for _, m in times):6.0f} MiB")


if __name__ == "__main__":
    main()
