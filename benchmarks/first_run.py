"""The first `sim run` after install against the same run warm: wall times and their ratio.

    python benchmarks/first_run.py [-n 1e6] [--workers 2]

The first run uses an empty numba cache (a fresh NUMBA_CACHE_DIR), so it
compiles what it needs; the second repeats it into another directory with
that cache filled, as every later run does. Each is a fresh process.
Target: the first run takes at most 3x the warm one.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_run(args, out: Path, env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sim", "run", *args, "--out", str(out)], env=env,
                       capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sim run failed: {r.stderr.strip()}")
    return seconds, r.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--policy", default="greedy")
    a = parser.parse_args()
    args = ["--policy", a.policy, "-n", a.n, "-w", a.workers]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba-cache"))
        cold, cold_err = timed_run(args, Path(tmp) / "first", env)
        warm, _ = timed_run(args, Path(tmp) / "second", env)
    said = [line for line in cold_err.splitlines() if "compil" in line]
    print(f"sim run {' '.join(args)}")
    print(f"  first run (empty cache): {cold:6.2f} s   said: {said[0] if said else '(nothing)'}")
    print(f"  warm run:                {warm:6.2f} s")
    print(f"  ratio first/warm:        {cold / warm:6.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()
