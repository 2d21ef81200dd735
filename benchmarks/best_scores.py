"""The README's best-score distribution, from a solve run: a markdown section to paste.

    sim solve -n 10000 --seed 0 --workers 2          # every deal proven: no node or time limit
    python benchmarks/best_scores.py results/solve-seed0-n10000

It reads the run's manifest (command, executor, workers, wall time summed
over its sessions) and its summary (`sim report`'s figures), and prints
the table of best scores with how many deals have each and how many of
those are proven, the mean, and whether every deal is proven.
"""

import argparse
import json
from pathlib import Path

from sim.analysis.report import load_solve_report


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
    print(section(parser.parse_args().run_dir))


if __name__ == "__main__":
    main()
