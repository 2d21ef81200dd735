"""The figures of a run (`sim report`): computed lazily from its Parquet parts, rendered as text, Markdown or JSON.

Everything a report shows is derived from one small table: the number of
games for each combination of (won, score, cards_played, face_down, end).
Polars computes it with a single streaming group-by over the parts, so a
run of 1e7 games is read in well under a second with bounded memory and no
column is ever collected whole. Quartiles are taken from the score
histogram (no sort of the scores).

Library code only returns values and strings; the CLI prints.
"""

import json
import math
import os
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from sim.analysis.tables import (
    Table, fmt_ci, fmt_int, fmt_num, fmt_pct, pct_digits, policy_text, rules_text, run_names,
)
from sim.engine.results import end_enum
from sim.jobs.files import TMP_MARK
from sim.jobs.runner import (
    GAMES, RunError, UsageError, checked_parts, chunk_count, part_bytes, read_manifest, stray_files, writer_pid,
)
from sim.jobs.solve_results import SolveSummary, summarize_solve
from sim.stats import mean_interval_from_counts, quantile_from_counts, wilson

MAX_DEFAULT_SCORE = 24
"""Largest score under the default rules (40 cards - 16 piles); the histogram always covers 0..24."""

KEYS = ("won", "score", "cards_played", "face_down", "end")


# --- the figures of one run -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunReport:
    """Every figure `sim report` shows for one run."""

    path: str
    """The run directory."""
    policy: str
    """The policy that played the games."""
    n: int
    """Games the run was asked for (manifest)."""
    seed: int
    """Seed of the deals and of the policy's random stream."""
    rules: dict
    """Rule options, as the manifest stores them."""
    deals: str
    """Where the decks come from: the deal algorithm and seed, or the deal file and its digest."""
    status: str
    """complete or incomplete (manifest)."""
    games: int
    """Games found in the parts."""
    wins: int
    """Games won."""
    losses: int
    """Games lost."""
    win_rate: float
    """wins / games (NaN without games)."""
    win_rate_low: float
    """95% Wilson interval of the win rate."""
    win_rate_high: float
    """Upper end of that interval."""
    score_counts: tuple[tuple[int, int], ...]
    """(score, wins with that score) for every score 0..24, and on to the highest score won when a rule option allows
    higher ones."""
    score_mean: float | None
    """Of the won games; None without wins."""
    score_mean_low: float | None
    """Lower end of the 95% interval (Student's t) of the mean score (None with fewer than two wins, or when every
    win scored the same: no spread, no interval)."""
    score_mean_high: float | None
    """Upper end of that interval."""
    score_median: float | None
    """Median score of the won games."""
    score_q1: float | None
    """First quartile of the won games' scores."""
    score_q3: float | None
    """Third quartile of the won games' scores."""
    ends: tuple[tuple[str, int], ...]
    """(end reason, games) for every end reason, in the enum's order."""
    cards_played_wins: tuple[tuple[int, int], ...]
    """(cards played, won games) for each value that occurs."""
    cards_played_losses: tuple[tuple[int, int], ...]
    """(cards played, lost games) for each value that occurs."""
    face_down_at_loss: tuple[tuple[int, int], ...]
    """(top cards face down at the end, lost games) for each value that occurs."""
    warnings: tuple[str, ...] = field(default=())
    """Why the figures may mislead (an incomplete run, missing games)."""
    policy_args: dict = field(default_factory=dict)
    """The policy's arguments (--policy-arg) as the manifest recorded them: two runs of one policy with other
    arguments are other players."""

    @property
    def player(self) -> str:
        """The policy with the arguments it played with ("rollout base=greedy samples=2"), as `sim ls` shows it."""
        return policy_text(self.policy, self.policy_args)

    @property
    def name(self) -> str:
        """The run directory's name."""
        return Path(self.path).name

    @property
    def score_per_deal(self) -> float | None:
        """Mean score over all the games, a lost game counting 0 (what a player scores per deal dealt); None
        without games."""
        return sum(s * k for s, k in self.score_counts) / self.games if self.games else None

    def to_dict(self) -> dict:
        """The report as `--format json` writes it: distributions keyed by value, shares included, NaN as None."""
        d = asdict(self)
        d["name"] = self.name
        d["score_per_deal"] = self.score_per_deal
        d["score_distribution"] = [{"score": s, "count": k, "share_of_wins": k / self.wins if self.wins else None,
                                    "share_of_games": k / self.games if self.games else None}
                                   for s, k in self.score_counts]
        d["lost"] = {"count": self.losses, "share_of_games": self.losses / self.games if self.games else None}
        d["ends"] = {name: k for name, k in self.ends}
        d["cards_played"] = {"wins": {str(c): k for c, k in self.cards_played_wins},
                             "losses": {str(c): k for c, k in self.cards_played_losses}}
        d["face_down_at_loss"] = {str(f): k for f, k in self.face_down_at_loss}
        for key in ("score_counts", "cards_played_wins", "cards_played_losses"):
            del d[key]
        d["warnings"] = list(self.warnings)
        for key in ("win_rate", "win_rate_low", "win_rate_high"):
            if isinstance(d[key], float) and math.isnan(d[key]):
                d[key] = None
        return d


def game_counts(run_dir: str | Path) -> pl.DataFrame:
    """Games per (won, score, cards_played, face_down, end): one pass over the parts, each counted from the bytes
    that were verified.

    The parts are counted in threads, a part each at a time (a part's read and count are mostly Polars' own
    work, outside the GIL, and too small for its threads to share), and the counts summed: whole numbers, the
    same in any order.
    """
    games_dir = Path(run_dir) / GAMES
    schema = {"won": pl.Boolean, "score": pl.UInt8, "cards_played": pl.UInt8, "face_down": pl.UInt8,
              "end": end_enum(), "count": pl.UInt64}
    parts = checked_parts(run_dir)
    if not parts:
        return pl.DataFrame(schema=schema)

    def counted(part) -> pl.DataFrame:
        data = part_bytes(*part)
        missing = [k for k in KEYS if k not in pl.read_parquet_schema(data)]
        if missing:
            raise UsageError(f"{run_dir} has no column {', '.join(missing)}: not a games table")
        data.seek(0)
        return pl.read_parquet(data, columns=list(KEYS)).group_by(*KEYS).agg(pl.len().cast(pl.UInt64).alias("count"))

    try:
        with ThreadPoolExecutor(min(len(parts), os.cpu_count() or 1)) as threads:
            counts = list(threads.map(counted, parts.items()))
        return pl.concat(counts).group_by(*KEYS).agg(pl.col("count").sum())
    except (pl.exceptions.PolarsError, OSError) as e:
        raise RunError(f"cannot read {games_dir}: {e}") from None


def _pairs(frame: pl.DataFrame, key: str) -> tuple[tuple[int, int], ...]:
    if frame.is_empty():
        return ()
    g = frame.group_by(key).agg(pl.col("count").sum()).sort(key)
    return tuple((int(v), int(k)) for v, k in g.iter_rows())


def deal_source(m: dict) -> str:
    """Where a manifest's decks come from: the deal file and its digest, or the algorithm and seed."""
    if m.get("deals"):
        return f"file {m['deals']} (sha256 {str(m.get('deals_sha256'))[:12]})"
    return f"{m.get('deal_algorithm')} seed {m.get('seed')}"


def load_report(run_dir: str | Path) -> RunReport:
    """The figures of the run in `run_dir` (raises UsageError if it is not a run)."""
    run_dir = Path(run_dir)
    m = read_manifest(run_dir)
    counts = game_counts(run_dir)
    games = int(counts["count"].sum()) if counts.height else 0
    wins_frame = counts.filter(pl.col("won"))
    loss_frame = counts.filter(~pl.col("won"))
    wins = int(wins_frame["count"].sum()) if wins_frame.height else 0
    losses = games - wins
    low, high = wilson(wins, games)

    scores = dict(_pairs(wins_frame, "score"))
    top = max([MAX_DEFAULT_SCORE, *scores])
    score_counts = tuple((s, scores.get(s, 0)) for s in range(top + 1))
    mean, mean_low, mean_high = mean_interval_from_counts(scores)

    end_counts = dict(counts.group_by("end").agg(pl.col("count").sum()).iter_rows()) if counts.height else {}
    ends = tuple((name, int(end_counts.get(name, 0))) for name in end_enum().categories)

    warnings = []
    status = m.get("status", "unknown")
    if status != "complete":
        warnings.append(f"run is {status}: {games:,} of {m.get('n', 0):,} games are done; {_to_finish(run_dir)}")
    elif games != m.get("n"):
        warnings.append(f"the manifest says {m.get('n'):,} games but the parts hold {games:,}")
    if games == 0:
        warnings.append("no games to report")
    left = sorted(p.name for p in (run_dir / GAMES).glob(f"*{TMP_MARK}*"))
    if left:  # a writer killed outright (kill -9) mid-write
        warnings.append(f"{GAMES}/ holds {len(left)} temporary file{'s' * (len(left) > 1)} ({', '.join(left[:3])}"
                        f"{', ...' if len(left) > 3 else ''}) left by an interrupted write, not counted; "
                        f"{_finish_command(run_dir)} removes {'them' if len(left) > 1 else 'it'}")
    stray = stray_files(run_dir, chunk_count(int(m["n"]), int(m["chunk_size"])))
    if stray:  # logged as the parts are checked too; said here for a report read as JSON or kept as a page
        warnings.append(f"{GAMES}/ holds {len(stray)} file{'s' * (len(stray) > 1)} that "
                        f"{'are not parts' if len(stray) > 1 else 'is not a part'} of this run "
                        f"({', '.join(stray[:3])}{', ...' if len(stray) > 3 else ''}), not counted")

    return RunReport(
        path=str(run_dir), policy=m.get("policy", "?"), n=int(m.get("n", 0)), seed=int(m.get("seed", 0)),
        rules=dict(m.get("rules", {})), deals=deal_source(m), status=status, games=games, wins=wins,
        losses=losses, win_rate=wins / games if games else math.nan, win_rate_low=low, win_rate_high=high,
        score_counts=score_counts, score_mean=mean, score_mean_low=mean_low, score_mean_high=mean_high,
        score_median=quantile_from_counts(scores, 0.5), score_q1=quantile_from_counts(scores, 0.25),
        score_q3=quantile_from_counts(scores, 0.75), ends=ends,
        cards_played_wins=_pairs(wins_frame, "cards_played"), cards_played_losses=_pairs(loss_frame, "cards_played"),
        face_down_at_loss=_pairs(loss_frame, "face_down"), warnings=tuple(warnings),
        policy_args=dict(m.get("policy_args") or {}),
    )


def load_reports(run_dirs) -> list[RunReport]:
    """The report of each run directory, in order."""
    return [load_report(d) for d in run_dirs]


# --- tables of a report ------------------------------------------------------------------------


def header_lines(r: RunReport) -> list[str]:
    """The lines above a run's tables: directory, settings, status and deal source."""
    return [
        f"run     {r.path}",
        f"policy  {r.player}   seed {r.seed}   n {r.n:,}   rules {rules_text(r.rules)}   status {r.status}",
        f"deals   {r.deals}",
    ]


def summary_table(r: RunReport) -> Table:
    """Games, wins, win rate with its interval, and the won games' score statistics."""
    d = pct_digits(r.games)
    rows = [
        ("games", fmt_int(r.games)),
        ("wins", fmt_int(r.wins)),
        ("win rate", fmt_pct(r.win_rate, d)),
        ("95% CI (Wilson)", fmt_ci(r.win_rate_low, r.win_rate_high, d)),
        ("mean score", fmt_num(r.score_mean)),
        ("median score", fmt_num(r.score_median, 1)),
        ("quartiles", "-" if r.score_q1 is None else f"{r.score_q1:g} .. {r.score_q3:g}"),
        ("score per deal", fmt_num(r.score_per_deal)),
    ]
    return Table("Summary", ("", "value"), tuple(rows),
                 note="Score statistics are of won games only; score per deal is over all the games, a lost game "
                      "counting 0.")


def score_table(r: RunReport, bar_width: int = 0) -> Table:
    """Count and share of each score among wins, lost games on their own line; optional '#' bars."""
    top = max((k for _, k in r.score_counts), default=0)
    scale = bar_width / top if top and bar_width > 0 else 0

    def bar(k):
        if not scale:
            return ()
        length = k * scale
        cells = "#" * round(length) if length <= bar_width else "#" * (bar_width - 1) + ">"
        if 0 < k and not cells:
            cells = "."
        return (cells,)

    rows = [(str(s), fmt_int(k), fmt_pct(k / r.wins if r.wins else None, 2),
             fmt_pct(k / r.games if r.games else None, 2), *bar(k)) for s, k in r.score_counts]
    rows.append(("lost", fmt_int(r.losses), "", fmt_pct(r.losses / r.games if r.games else None, 2), *bar(r.losses)))
    headers = ("score", "games", "of wins", "of games") + (("",) if scale else ())
    note = "Score = cards left in the stock at a win."
    if scale:
        note += " Bars share one scale; a bar ending in '>' is cut at the width."
    return Table("Score distribution", headers, tuple(rows), align="rrrrl", note=note)


def ends_table(r: RunReport) -> Table:
    """Games and share of each way a game can end."""
    rows = [(name, fmt_int(k), fmt_pct(k / r.games if r.games else None, 2)) for name, k in r.ends]
    return Table("End reasons", ("end", "games", "share"), tuple(rows))


def cards_played_table(r: RunReport) -> Table:
    """How many cards were placed before the game ended, wins and losses side by side."""
    w, lo = dict(r.cards_played_wins), dict(r.cards_played_losses)
    rows = [(str(c), fmt_int(w.get(c, 0)), fmt_int(lo.get(c, 0))) for c in sorted(set(w) | set(lo))]
    return Table("Cards played by outcome", ("cards", "wins", "losses"), tuple(rows))


def face_down_table(r: RunReport) -> Table:
    """How many top cards were face down when a game was lost."""
    rows = [(str(f), fmt_int(k), fmt_pct(k / r.losses if r.losses else None, 2)) for f, k in r.face_down_at_loss]
    return Table("Face-down top cards at a loss", ("face down", "losses", "of losses"), tuple(rows))


def overview_table(reports: list[RunReport]) -> Table:
    """One line per run, for reports of several runs."""
    d = max(pct_digits(r.games) for r in reports)
    rows = tuple((name, r.player, rules_text(r.rules), fmt_int(r.games), fmt_int(r.wins), fmt_pct(r.win_rate, d),
                  fmt_ci(r.win_rate_low, r.win_rate_high, d), fmt_num(r.score_mean),
                  fmt_num(r.score_median, 1), fmt_num(r.score_per_deal), r.status)
                 for name, r in zip(run_names(r.path for r in reports), reports))
    return Table("Runs", ("run", "policy", "rules", "games", "wins", "win rate", "95% CI", "mean score",
                          "median", "per deal", "status"), rows, align="lllrrrrrrrl",
                 note="Win rate with its 95% Wilson interval; mean score and median of won games only; per deal: "
                      "score per deal, over all the games, a lost game counting 0.")


def tables(r: RunReport, bar_width: int = 0) -> list[Table]:
    """A run's tables in the order the report shows them."""
    return [summary_table(r), score_table(r, bar_width), ends_table(r), cards_played_table(r), face_down_table(r)]


# --- renderers ---------------------------------------------------------------------------------


def render_text(reports: list[RunReport], width: int = 80, comparison=None, unpaired: str = "") -> str:
    """Aligned tables and a '#' histogram of the score distribution, fitted to `width` columns.

    `comparison` (a `sim.analysis.compare.Comparison` of the runs, when they
    share their deals): its pairs follow the overview, as on the page;
    `unpaired`: why there is none (the runs' deals differ, or they are too many games to join here), said
    there instead, a run directory's name never cut."""
    blocks = []
    if len(reports) > 1:
        blocks.append(overview_table(reports).text(width=width))
    if unpaired:
        blocks.append("\n".join(textwrap.wrap(f"No paired comparison: {unpaired}", width, break_on_hyphens=False,
                                                break_long_words=False)))
    if comparison is not None:
        blocks.append("\n".join(textwrap.wrap(comparison.header(), width)) + "\n\n"
                      + comparison.tables()[1].text(width=width))
    for r in reports:
        plain = len(score_table(r).text().splitlines()[2])  # the rule under the headers: the table's width
        bar_width = max(10, width - plain - 3)
        lines = header_lines(r) + [f"WARNING: {w}" for w in r.warnings]
        block = ["\n".join(lines)] + [t.text(width=width) for t in tables(r, bar_width)]
        blocks.append("\n\n".join(block))
    return ("\n\n" + "=" * min(width, 80) + "\n\n").join(blocks) + "\n"


def render_markdown(reports: list[RunReport], comparison=None, unpaired: str = "") -> str:
    """The reports as one markdown document: the overview of several runs (and their paired comparison,
    when given, or why there is none), then a section per run."""
    out = ["# Run report", ""]
    if len(reports) > 1:
        out += [overview_table(reports).markdown(), ""]
    if unpaired:
        out += [f"No paired comparison: {unpaired}", ""]
    if comparison is not None:
        out += ["## Paired comparison", "", comparison.header(), "", comparison.tables()[1].markdown(), ""]
    for name, r in zip(run_names(r.path for r in reports), reports):
        out += [f"## {name}", ""]
        out += [f"- {line}" for line in header_lines(r)]
        out += [f"- **Warning:** {w}" for w in r.warnings]
        out.append("")
        for t in tables(r):
            out += [t.markdown(), ""]
    return "\n".join(out)


def render_json(reports: list[RunReport], comparison=None, unpaired: str = "", key: str = "runs") -> str:
    """The reports as JSON: {"runs": [...]} (or `key`: "solve_runs"), one `to_dict` each, and "comparison" when
    given ("unpaired": why there is none, when the runs' deals differ or they are too many games to join here)."""
    out = {key: [r.to_dict() for r in reports]}
    if comparison is not None:
        out["comparison"] = comparison.to_dict()
    if unpaired:
        out["unpaired"] = unpaired
    return json.dumps(out, indent=2) + "\n"


def render(reports: list[RunReport], fmt: str = "text", width: int = 80, comparison=None, unpaired: str = "") -> str:
    """The reports as text, markdown or json (UsageError for another format), with the runs' paired
    `comparison` when given, or why there is none (`unpaired`)."""
    if fmt == "text":
        return render_text(reports, width, comparison, unpaired)
    if fmt == "markdown":
        return render_markdown(reports, comparison, unpaired)
    if fmt == "json":
        return render_json(reports, comparison, unpaired)
    raise UsageError(f"--format {fmt!r} is not one of text, markdown, json")


# --- solve runs -----------------------------------------------------------------------------


def _to_finish(run_dir: Path) -> str:
    """How an incomplete run gets finished: by the process writing it now, or by the command that resumes it."""
    pid = writer_pid(run_dir)
    if pid is not None:
        return f"it is being written now (pid {pid})"
    return f"finish it with: {_finish_command(run_dir)}"


def _finish_command(run_dir: Path) -> str:
    """`sim.jobs.resume.finish_command`, imported only for a run that needs finishing: it reads the run's job from
    its manifest, and the jobs load numba, which reporting a finished run does without."""
    from sim.jobs.resume import finish_command

    return finish_command(run_dir)


def solve_report_text(r: SolveSummary) -> str:
    """The text `sim report` prints for a solve run."""
    m = read_manifest(r.path)
    head = [f"run     {r.path}   (sim solve)",
            f"deals   {m.get('deal_algorithm')} seed {m.get('seed')}   n {m.get('n', 0):,}   "
            f"rules {rules_text(m.get('rules', {}))}   status {r.status}"]
    if r.status != "complete":
        head.append(f"WARNING: the run is {r.status}; {_to_finish(r.path)}")
    return "\n".join(head + [""] + r.lines()) + "\n"



def is_solve_run(run_dir) -> bool:
    """Does `run_dir` hold a solve run (manifest kind "solve")?"""
    try:
        m = json.loads((Path(run_dir) / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(m, dict) and m.get("kind") == "solve"


def load_solve_report(run_dir) -> SolveSummary:
    """The summary of a solve run directory, as its manifest and parts give it."""
    m = read_manifest(Path(run_dir))
    return summarize_solve(Path(run_dir), float(m.get("seconds") or 0.0),
                           sum((m.get("parts") or {}).values()), m.get("status", "unknown"))


def solve_overview_table(summaries: list[SolveSummary]) -> Table:
    """One line per solve run, for reports of several."""
    d = max(pct_digits(r.deals) for r in summaries)
    rows = []
    for name, r in zip(run_names(r.path for r in summaries), summaries):
        m = read_manifest(r.path)
        share = (lambda k: fmt_pct(k / r.deals, d)) if r.deals else (lambda k: "-")  # noqa: E731
        rows.append((name, rules_text(m.get("rules", {})), fmt_int(r.deals), fmt_int(r.won), fmt_int(r.lost),
                     fmt_int(r.unresolved), f"{share(r.won)} .. {share(r.won + r.unresolved)}" if r.deals else "-",
                     fmt_ci(r.winnable_low, r.winnable_high, d) if r.deals else "-", fmt_num(r.mean_score),
                     fmt_int(r.proven), r.status))
    return Table("Solve runs", ("run", "rules", "deals", "won", "lost", "unresolved", "winnable", "95% CI",
                                "mean score", "proven best", "status"), tuple(rows), align="llrrrrrrrrl",
                 note="winnable: from unresolved deals counted as lost to counted as won, with the 95% Wilson "
                      "interval over both ends; mean score: the best score found, over won deals (the first win "
                      "found, with --first-win); proven best: won deals whose best score is proven.")


def render_solve_reports(reports: list[SolveSummary], fmt: str = "text", width: int = 80, comparison=None,
                         unpaired: str = "") -> str:
    """`sim report` on solve runs (`load_solve_report`): winnability with unresolved deals bracketed, best-score
    distribution; several runs get an overview first, and their paired `comparison` when given, or why there is
    none (`unpaired`)."""
    if fmt == "json":
        return render_json(reports, comparison, unpaired, key="solve_runs")
    if fmt == "markdown":
        blocks = []
        if len(reports) > 1:
            blocks.append(solve_overview_table(reports).markdown() + "\n")
        if unpaired:
            blocks.append(f"No paired comparison: {unpaired}\n")
        if comparison is not None:
            blocks.append("\n".join(["## Paired comparison", "", comparison.header(), "",
                                     *[f"- {n}" for n in comparison.notes], "", comparison.tables()[1].markdown(), ""]))
        for name, r in zip(run_names(r.path for r in reports), reports):
            blocks.append("\n".join([f"## {name} (sim solve)", "", "```", solve_report_text(r).rstrip(), "```", ""]))
        return "# Solve report\n\n" + "\n".join(blocks)
    blocks = []
    if len(reports) > 1:
        blocks.append(solve_overview_table(reports).text(width=width) + "\n")
    if unpaired:
        blocks.append("\n".join(textwrap.wrap(f"No paired comparison: {unpaired}", width, break_on_hyphens=False,
                                                break_long_words=False)) + "\n")
    if comparison is not None:
        blocks.append("\n".join(textwrap.wrap(comparison.header(), width)
                                 + [w for n in comparison.notes for w in textwrap.wrap(f"note: {n}", width)])
                      + "\n\n" + comparison.tables()[1].text(width=width) + "\n")
    return ("\n" + "=" * min(width, 80) + "\n\n").join(blocks + [solve_report_text(r) for r in reports])
