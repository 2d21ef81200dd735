"""A solve run's rows and what they add up to: the Parquet schema of its parts (`solve_frame`) and its summary
(`SolveSummary`, as `sim solve` prints it and `sim report` shows it).

Apart from the solve job (sim.jobs.solve), so that reading a solve run, as `sim report`, `sim ls` and
`sim.load` do, loads neither the solver nor numba.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sim.fielddocs import documented
from sim.jobs import runner
from sim.jobs.runner import read_manifest
from sim.solver.settings import OUTCOMES, SAT_AFTER, SPLIT_AFTER, default_split_after
from sim.stats import wilson

OUTCOME_ENUM = pl.Enum(list(OUTCOMES))
"""The `outcome` column's type."""


def solve_frame(cols: dict) -> pl.DataFrame:
    """The Parquet schema of a solve part: one row per deal."""
    frame = pl.DataFrame({
        "game": pl.Series(cols["game"], dtype=pl.UInt64),
        "outcome": pl.Series(cols["outcome"], dtype=pl.UInt8),
        "score": pl.Series(cols["score"], dtype=pl.Int8),
        "proven_best": pl.Series(cols["proven_best"], dtype=pl.Boolean),
        "nodes": pl.Series(cols["nodes"], dtype=pl.UInt64),
        "seconds": pl.Series(cols["seconds"], dtype=pl.Float64),
        "moves": pl.Series(cols["moves"], dtype=pl.List(pl.UInt8)),
        "score_bound": pl.Series(cols["score_bound"], dtype=pl.Int8),
    }).with_columns(
        runner.null_when_negative("score"),
        runner.null_when_negative("score_bound"),
        pl.col("outcome").replace_strict(dict(enumerate(OUTCOMES)), return_dtype=OUTCOME_ENUM),
    )
    return runner.with_decks(frame, cols)


# --- summary and report ------------------------------------------------------------------------


def options_used(options: dict) -> dict:
    """A solve run's options as its manifest records them, less sat_conflicts when no SAT question could be
    asked: they come once the serial search has used SAT_AFTER nodes, so a smaller node limit, or a smaller
    split threshold (a split solve asks none), stops it first (a limit of exactly that many asks them). What a
    summary or a comparison of the run names."""
    limits = [k for k in (options.get("node_limit"), options.get("split_after")) if k]  # split_after 0: never
    asks = not limits or min(limits) >= SAT_AFTER
    return {k: v for k, v in options.items() if k != "sat_conflicts" or asks}


@documented
@dataclass(frozen=True)
class SolveSummary:
    """What a solve run found, as the command line prints it (and `sim report` shows)."""

    path: Path
    """The run directory."""
    deals: int
    """Deals solved so far."""
    won: int
    """Deals the solver won: winnable."""
    lost: int
    """Deals proven unwinnable."""
    unresolved: int
    """Deals left undecided when a node or time limit stopped the search."""
    winnable_low: float
    """Lower end of the 95% Wilson interval of the winnable share, unresolved deals counted as losses."""
    winnable_high: float
    """Upper end, unresolved deals counted as wins."""
    proven: int
    """Won deals whose best score is proven."""
    score_counts: tuple[tuple[int, int, int], ...]
    """(score, won deals with that best score found, of which proven), for every score that occurs."""
    mean_score: float | None
    """Mean best score found, over won deals."""
    mean_proven: float | None
    """Mean best score over the deals whose best is proven."""
    mean_bound: float | None
    """Mean of the proven upper bounds of the best scores, over won deals: the true mean lies
    between mean_score and this."""
    median_seconds: float | None
    """Median solving time of a deal."""
    p99_seconds: float | None
    """99th percentile of a deal's solving time."""
    median_nodes: float | None
    """Median number of search nodes of a deal."""
    p99_nodes: float | None
    """99th percentile of a deal's search nodes."""
    seconds: float
    """Wall time of this invocation."""
    deals_per_s: float
    """Deals solved by this invocation per second of wall time."""
    status: str
    """complete or incomplete."""
    options: dict
    """The run's solver options, as its manifest records them (first_win, node_limit, time_limit, split_after,
    sat_conflicts)."""
    note: str = ""
    """A line said before the figures (e.g. that the run was complete already and nothing was solved)."""

    def lines(self) -> list[str]:
        """The summary's figures, one line each, shared by `sim solve` and `sim report`."""
        d = self.deals or 1
        digits = max(2, len(str(self.deals)) - 3)  # enough to tell the interval's ends apart
        pct = lambda k: f"{k / d:.{digits}%}"  # noqa: E731
        limits = ", ".join(f"{k.replace('_', ' ')} {v:g}" if isinstance(v, float) else f"{k.replace('_', ' ')} {v}"
                           for k, v in options_used(self.options).items()
                           if k not in ("first_win", "split_after") and v is not None) or "no limit"
        if self.options.get("split_after", SPLIT_AFTER) != default_split_after(self.options.get("time_limit")):
            limits += f"; split after {self.options['split_after'] or 'never'}"
        out = [
            f"deals        {self.deals:,}   ({'first win only' if self.options.get('first_win') else 'best score'}"
            f"; {limits})",
            f"won          {self.won:,} ({pct(self.won)})   lost {self.lost:,} ({pct(self.lost)})   "
            f"unresolved {self.unresolved:,} ({pct(self.unresolved)})",
            f"winnable     {pct(self.won)} .. {pct(self.won + self.unresolved)}   "
            f"(95% CI {pct(self.winnable_low * d)} .. {pct(self.winnable_high * d)}; "
            f"unresolved counted as lost .. as won)" if self.deals else "winnable     n/a (no deal solved yet)",
        ]
        if self.won and self.options.get("first_win"):
            out.append(f"first win    mean score {self.mean_score:.3f} of the first win found (not the best score; "
                       f"proven best on {self.proven:,} deals)")
        elif self.won:
            out.append(f"best score   mean {self.mean_score:.3f} over won deals (the true mean is at most "
                       f"{self.mean_bound:.3f}); proven best on {self.proven:,} of {self.won:,} "
                       f"({self.proven / self.won:.2%})"
                       + ("" if self.mean_proven is None else f", mean {self.mean_proven:.3f} over those"))
            out.append("  score   deals   proven   share")
            for score, k, p in self.score_counts:
                out.append(f"  {score:5d} {k:7,d} {p:8,d}   {k / d:6.2%}")
        if self.median_seconds is not None:
            out.append(f"per deal     median {1000 * self.median_seconds:.3f} ms, {self.median_nodes:,.0f} nodes; "
                       f"99th percentile {1000 * self.p99_seconds:,.1f} ms, {self.p99_nodes:,.0f} nodes")
        return out

    def text(self) -> str:
        """The summary `sim solve` prints: the figures, then wall time and output directory."""
        return "\n".join(([self.note] if self.note else []) + self.lines() + [
            f"wall time    {self.seconds:.2f} s  ({self.deals_per_s:,.1f} deals/s)",
            f"output       {self.path}",
        ])

    def to_dict(self) -> dict:
        """Every field, JSON-ready: path as text, score counts as records, NaN as None."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["path"] = str(self.path)
        d["score_counts"] = [{"score": s, "deals": k, "proven": p} for s, k, p in self.score_counts]
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def summarize_solve(run_dir: Path, seconds: float, solved: int, status: str) -> SolveSummary:
    """The summary of a solve run directory's deals, from lazy scans of its parts."""
    run_dir = Path(run_dir)
    options = dict(read_manifest(run_dir).get("solve") or {})
    columns = ["outcome", "score", "proven_best", "nodes", "seconds", "score_bound"]
    frames = [pl.read_parquet(runner.part_bytes(path, sha256), columns=columns)  # the bytes that were checked
              for path, sha256 in runner.checked_parts(run_dir).items()]
    if frames:
        lf = pl.concat(frames).lazy()  # six numbers a deal: a solve run's deals take seconds each
        counts = dict(lf.group_by("outcome").len().collect().iter_rows())
        scores = (lf.filter(pl.col("outcome") == "won").group_by("score")
                  .agg(pl.len().alias("k"), pl.col("proven_best").sum().alias("p")).sort("score").collect())
        stats = lf.select(
            pl.col("seconds").median().alias("s50"), pl.col("seconds").quantile(0.99, "higher").alias("s99"),
            pl.col("nodes").median().alias("n50"), pl.col("nodes").quantile(0.99, "higher").alias("n99"),
            pl.col("score").mean().alias("mean"),
            pl.col("score").filter(pl.col("proven_best")).mean().alias("mean_proven"),
            pl.col("score_bound").filter(pl.col("outcome") == "won").mean().alias("mean_bound"),
        ).collect().row(0, named=True)
    else:
        counts, scores, stats = {}, None, {}
    won, lost, unresolved = (int(counts.get(o, 0)) for o in OUTCOMES)
    deals = won + lost + unresolved
    low = wilson(won, deals)[0] if deals else math.nan
    high = wilson(won + unresolved, deals)[1] if deals else math.nan
    score_counts = tuple((int(s), int(k), int(p)) for s, k, p in scores.iter_rows()) if scores is not None else ()
    return SolveSummary(
        path=run_dir, deals=deals, won=won, lost=lost, unresolved=unresolved, winnable_low=low, winnable_high=high,
        proven=sum(p for _, _, p in score_counts), score_counts=score_counts, mean_score=stats.get("mean"),
        mean_proven=stats.get("mean_proven"), mean_bound=stats.get("mean_bound"), median_seconds=stats.get("s50"), p99_seconds=stats.get("s99"),
        median_nodes=stats.get("n50"), p99_nodes=stats.get("n99"), seconds=seconds,
        deals_per_s=solved / seconds if seconds > 0 else math.nan, status=status, options=options,
    )
