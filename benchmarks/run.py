"""`sim run` end to end: wall time with 1 and 2 workers, their ratio, games/s, peak memory.

    python benchmarks/run.py [-n 1e6] [--no-memory]

Each run is a fresh `sim run` process (the compile cache is warmed first, so
start-up is a cache load, as in everyday use). Peak memory is the main
process's and the largest worker's maximum resident set size. The memory
check then compares a 1e7-game run with a 1e5-game run: results stream to
disk chunk by chunk, so the two should be close.
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
def report():
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print("PEAK " + json.dumps({"main_kib": me, "worker_kib": kids}), file=sys.stderr)
atexit.register(report)
sys.argv = ["sim"] + sys.argv[1:]
runpy.run_module("sim", run_name="__main__")
"""


def sim_run(args: list[str]) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", WRAPPER, "run", *args, "-q"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"sim run {' '.join(args)} failed:\n{r.stderr}")
    peak = json.loads(next(line for line in r.stderr.splitlines() if line.startswith("PEAK "))[5:])
    out = Path(args[args.index("--out") + 1])
    manifest = json.loads((out / "manifest.json").read_text())
    # The run's own figure: from its first chunk handed out to its last part written, start-up excluded.
    return {"wall": wall, "in_run": manifest["games_per_s"], **peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6", help="games per run (default 1e6)")
    parser.add_argument("--policy", default="greedy")
    parser.add_argument("--no-memory", action="store_true", help="skip the 1e5 vs 1e7 memory comparison")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask executor row (2-worker LocalCluster)")
    args = parser.parse_args()
    n = int(float(args.n))

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        sim_run(["--policy", args.policy, "-n", "1000", "--out", str(out / "warm")])  # warm the compile cache
        rows = {}
        for workers in (1, 2):
            rows[workers] = sim_run(["--policy", args.policy, "-n", str(n), "--workers", str(workers),
                                     "--out", str(out / f"w{workers}")])
        print(f"sim run --policy {args.policy} -n {n:,} (wall time includes start-up)")
        for workers, r in rows.items():
            print(f"  workers={workers}: {r['wall']:6.2f} s wall, {n / r['wall']:10,.0f} games/s end to end, "
                  f"{r['in_run']:10,.0f} games/s in the run; peak RSS main {r['main_kib'] / 1024:.0f} MiB, "
                  f"worker {r['worker_kib'] / 1024:.0f} MiB")
        print(f"  speed-up workers=2 vs workers=1: {rows[1]['wall'] / rows[2]['wall']:.2f}x end to end, "
              f"{rows[2]['in_run'] / rows[1]['in_run']:.2f}x in the run (start-up excluded)")

        if not args.no_dask:
            from distributed import LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                              silence_logs=40) as cluster:
                sim_run(["--policy", args.policy, "-n", "1000", "--executor", "dask", "--scheduler",
                         cluster.scheduler_address, "--out", str(out / "dwarm")])
                d = sim_run(["--policy", args.policy, "-n", str(n), "--executor", "dask", "--scheduler",
                             cluster.scheduler_address, "--out", str(out / "dask")])
            print(f"  dask, 2-worker LocalCluster: {d['wall']:6.2f} s wall, {n / d['wall']:10,.0f} games/s end to end, "
                  f"{d['in_run']:10,.0f} in the run: {rows[2]['wall'] / d['wall']:.2f}x end to end and "
                  f"{d['in_run'] / rows[2]['in_run']:.2f}x in the run of the local executor with 2 workers")

        if not args.no_memory:
            small = sim_run(["--policy", args.policy, "-n", "1e5", "--workers", "2", "--out", str(out / "m5")])
            big = sim_run(["--policy", args.policy, "-n", "1e7", "--workers", "2", "--out", str(out / "m7")])
            print("peak memory, main process (workers=2):")
            print(f"  1e5 games: {small['main_kib'] / 1024:6.0f} MiB   1e7 games: {big['main_kib'] / 1024:6.0f} MiB"
                  f"   ratio {big['main_kib'] / small['main_kib']:.2f}  (1e7 run: {big['wall']:.1f} s)")
            print(f"  largest worker: 1e5 {small['worker_kib'] / 1024:.0f} MiB, 1e7 {big['worker_kib'] / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
