"""The README's best-score distribution, from a solve run: a markdown section to paste.

    sim solve -n 10000 --seed 0 --workers 2          # every deal proven: no node or time limit
    python benchmarks/best_scores.py results/solve-seed0-n10000 --hard 1e9
    python benchmarks/best_scores.py results/solve-seed0-n10000-t10 --against results/solve-seed0-n10000

It reads the run's manifest (command, executor, workers, wall time summed
over its sessions) and its summary (`sim report`'s figures), and prints
the table of best scores with how many deals have each and how many of
those are proven, the mean, and whether every deal is proven. `--hard N`
adds the deals that took more than N nodes; `--against RUN` compares the
run (one with a time limit, say) with another run of the same deals
(every one proven, say) on the deals both have written.
"""

import argparse
import json
from pathlib import Path

import polars as pl

from sim.analysis.report import load_solve_report
from sim.jobs.runner import run_parts


def rows(run_dir: Path) -> pl.DataFrame:
    """The run's rows, from the parts its manifest lists (each checked to hold its games)."""
    return pl.read_parquet(run_parts(run_dir))


def _nodes(k: int) -> str:
    """A node count in G or M, whichever shows it with a digit or more before the point."""
    return f"{k / 1e9:.1f} G" if k >= 1e9 else f"{k / 1e6:.1f} M"


def hard(run_dir: Path, nodes: float) -> str:
    lines = [f"Deals that took more than {nodes:,.0f} nodes:", "", "| deal | best score | proven | nodes | seconds |",
             "| ---: | ---: | :---: | ---: | ---: |"]
    for r in rows(run_dir).filter(pl.col("nodes") > nodes).sort("game").iter_rows(named=True):
        lines.append(f"| {r['game']} | {r['score']} | {'yes' if r['proven_best'] else 'no'} | "
                     f"{_nodes(r['nodes'])} | {r['seconds']:,.0f} |")
    return "\n".join(lines)


def against(run_dir: Path, other: Path) -> str:
    """How the run's best scores compare with another run's, on the deals both have written."""
    a = rows(run_dir).select("game", "score", "proven_best", "score_bound")
    b = rows(other).select("game", pl.col("score").alias("other"), pl.col("proven_best").alias("other_proven"))
    j = a.join(b, on="game")
    both = j.filter(pl.col("proven_best") & pl.col("other_proven"))
    differ = both.filter(pl.col("score") != pl.col("other"))["game"].to_list()
    open_here = j.filter(~pl.col("proven_best") & pl.col("other_proven"))
    found_best = int((open_here["score"] == open_here["other"]).sum())
    outside = open_here.filter((pl.col("other") < pl.col("score")) | (pl.col("other") > pl.col("score_bound")))
    return (f"Against {other}, on the {j.height:,} deals both runs have: both prove {both.height:,}, "
            f"{'all with the same best score' if not differ else f'different scores on deals {differ}'}; "
            f"of the {open_here.height:,} open here and proven there, the win found here is already the best on "
            f"{found_best:,}" + (f"; outside this run's bracket: deals {outside['game'].to_list()}" if outside.height
                                 else "; every one lies within this run's bracket") + ".")


def section(run_dir: Path) -> str:
    m = json.loads((run_dir / "manifest.json").read_text())
    s = load_solve_report(run_dir)
    sessions = m.get("sessions") or []
    where = ", ".join(sorted({f"{x.get('executor')} ({x.get('workers') or 'cluster'} workers)" for x in sessions}))
    all_proven = s.proven == s.deals
    lines = [
        f"Best score of each of the {s.deals:,} deals of seed {m['seed']}"
        + (", every one proven" if all_proven else f" ({s.proven:,} proven, {s.deals - s.proven:,} not)")
        + f": `{m.get('command', '')}` ({s.status}; wall time {m.get('seconds', 0):,.0f} s, {where}; "
          f"`sim report {run_dir}` gives the same figures).",
        "",
        "| best score | deals | share | proven |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for score, k, p in sorted(s.score_counts, reverse=True):
        lines.append(f"| {score} | {k:,} | {k / s.deals:.2%} | {p:,} |")
    if s.lost or s.unresolved:
        lines.append(f"| lost / unresolved | {s.lost:,} / {s.unresolved:,} | | |")
    lines += ["", f"Mean best score {s.mean_score:.3f}" + ("" if all_proven else
              f" (found; the true mean is at most {s.mean_bound:.3f})")
              + f"; per deal: median {1000 * s.median_seconds:.1f} ms, 99th percentile "
                f"{s.p99_seconds:.1f} s."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--hard", type=float, metavar="NODES", help="list the deals that took more than NODES nodes")
    parser.add_argument("--against", type=Path, metavar="RUN", help="compare with another solve run of the same deals")
    args = parser.parse_args()
    print(section(args.run_dir))
    if args.hard is not None:
        print("\n" + hard(args.run_dir, args.hard))
    if args.against is not None:
        print("\n" + against(args.run_dir, args.against))


if __name__ == "__main__":
    main()
