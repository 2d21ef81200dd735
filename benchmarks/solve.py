"""The solver over many deals: `sim solve` with --first-win and for the best score.

    python benchmarks/solve.py [-n 2000] [--seed 0] [--time-limit 10 | --node-limit N] [--workers 2] [--out DIR]

For each mode it runs `sim solve -n N --seed S --time-limit T` (a fresh
process, worker pool included) and prints the share of deals won / lost /
unresolved, how many best scores are proven, the mean best score, and the
median and 99th-percentile seconds and nodes per deal, and the CPU time of
the job's main process against its workers' (the main process hands out
split deals' subtrees and joins their rounds: its share is overhead). With
--node-limit instead of a time limit the rows are the same on any machine.
The runs are kept under --out (default: a temporary directory) for `sim report`.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl


# `sim solve` in a process that reports its own CPU time and its workers' as its last line.
CLI_WITH_CPU = """
import atexit, resource, sys
def cpu():
    me, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"cpu {me.ru_utime + me.ru_stime} {workers.ru_utime + workers.ru_stime}")
atexit.register(cpu)
sys.argv = ["sim", *sys.argv[1:]]
from sim.cli import main
main()
"""


def sim_solve(args: list[str]) -> tuple[float, float, float]:
    """Run `sim solve args`: its wall time, and the CPU seconds of its main process and of its workers."""
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", CLI_WITH_CPU, "solve", *args, "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"sim solve {' '.join(args)} failed:\n{r.stderr}")
    _, main_cpu, workers_cpu = r.stdout.strip().splitlines()[-1].split()
    return time.perf_counter() - t0, float(main_cpu), float(workers_cpu)


def describe(run_dir: Path, times: tuple[float, float, float], command: str) -> str:
    wall, main_cpu, workers_cpu = times
    df = pl.read_parquet(run_dir / "games" / "*.parquet")
    n = df.height
    count = {o: int((df["outcome"] == o).sum()) for o in ("won", "lost", "unresolved")}
    won = df.filter(pl.col("outcome") == "won")
    proven = int(won["proven_best"].sum())
    q = lambda col, p: float(df[col].quantile(p, "higher"))  # noqa: E731
    lines = [
        f"$ {command}",
        f"  deals {n:,}: won {count['won']:,} ({count['won'] / n:.2%}), lost {count['lost']:,} "
        f"({count['lost'] / n:.2%}), unresolved {count['unresolved']:,} ({count['unresolved'] / n:.2%})",
        f"  best score proven on {proven:,} of {n:,} deals ({proven / n:.2%}); "
        f"mean best score found {won['score'].mean():.3f} (won deals)"
        + (f", mean over proven {won.filter(pl.col('proven_best'))['score'].mean():.3f}" if proven else ""),
        f"  seconds per deal: median {q('seconds', 0.5):.6f}, 99th percentile {q('seconds', 0.99):.6f}, "
        f"max {df['seconds'].max():.6f}",
        f"  nodes per deal:   median {q('nodes', 0.5):,.0f}, 99th percentile {q('nodes', 0.99):,.0f}, "
        f"max {df['nodes'].max():,}",
        f"  wall time {wall:.1f} s; CPU: main process {main_cpu:.1f} s, workers {workers_cpu:.1f} s",
    ]
    scores = won.group_by("score").agg(pl.len().alias("deals"), pl.col("proven_best").sum().alias("proven"))
    lines.append("  best scores: " + ", ".join(f"{s}: {k} ({p} proven)" for s, k, p in
                                              scores.sort("score", descending=True).iter_rows()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="2000", help="deals (default 2000)")
    parser.add_argument("--seed", default="0")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--time-limit", default=None, help="seconds per deal (default 10)")
    limit.add_argument("--node-limit", default=None, help="nodes per deal instead (reproducible rows)")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--mode", choices=("both", "first-win", "best"), default="both")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        # warm the compile cache, so start-up is a cache load as in everyday use
        sim_solve(["-n", "4", "--node-limit", "1000", "--out", str(out / "warm"), "--force"])
        modes = {"first-win": ["--first-win"], "best": []}
        for name, extra in modes.items():
            if args.mode not in ("both", name):
                continue
            run_dir = out / f"solve-{name}"
            limit = ["--node-limit", args.node_limit] if args.node_limit else ["--time-limit", args.time_limit or "10"]
            opts = ["-n", args.n, "--seed", args.seed, *limit, "--workers", args.workers,
                    *extra, "--out", str(run_dir), "--force"]
            times = sim_solve(opts)
            print(describe(run_dir, times, "sim solve " + " ".join(o for o in opts if o != "--force")), flush=True)


if __name__ == "__main__":
    main()
