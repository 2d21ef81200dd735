"""Rule-variant sweeps (`sim sweep`): one run per combination of rule option values, on the same deals."""

import itertools
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sim.analysis.compare import json_ready, render_as, make_runs
from sim.analysis.report import load_report
from sim.analysis.tables import Table, count, fmt_ci, fmt_int, fmt_num, fmt_pct, pct_digits, policy_text
from sim.engine.rules import Rules
from sim.jobs import runner
from sim.jobs.runner import UsageError
from sim.stats import score_per_deal


def parse_sweep_options(items: list[str]) -> list[tuple[str, list[str]]]:
    """["max_face_down=3,4,5", "max_pile=3,4"] -> [("max_face_down", ["3", "4", "5"]), ("max_pile", ["3", "4"])].

    Every value is checked against the rule's valid range, and written as the rules write it ("03" is "3").
    """
    axes: list[tuple[str, list[str]]] = []
    for item in items or []:
        key, sep, values = item.partition("=")
        key = key.strip()
        vals = [v.strip() for v in values.split(",")]
        if not sep or not key or not all(vals):
            raise UsageError(f"--rule {item!r} is not KEY=V1,V2,... (e.g. --rule max_face_down=3,4,5)")
        if key in (k for k, _ in axes):
            raise UsageError(f"--rule {key} is given twice; list its values once: {key}=V1,V2,...")
        try:  # each value as the rules write it (03 is 3)
            vals = [str(Rules.from_strings({key: v}).as_dict()[key]) for v in vals]
        except ValueError as e:
            raise UsageError(str(e)) from None
        if len(set(vals)) < len(vals):
            raise UsageError(f"--rule {item!r} lists a value twice")
        axes.append((key, vals))
    if not axes:
        raise UsageError("give at least one --rule KEY=V1,V2,... to sweep")
    return axes


def combinations(axes: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """The cartesian product, the first option varying slowest, values in the order given."""
    keys = [k for k, _ in axes]
    return [dict(zip(keys, values)) for values in itertools.product(*(v for _, v in axes))]


@dataclass(frozen=True)
class SweepRow:
    """One combination of rule option values and how its run did."""

    values: tuple[str, ...]
    """The option values of this combination, in the order of `Sweep.options`."""
    path: str
    """The run directory."""
    games: int
    """Games in the run."""
    wins: int
    """Games won."""
    win_rate: float
    """wins / games."""
    win_rate_low: float
    """Lower end of the 95% Wilson interval of the win rate."""
    win_rate_high: float
    """Upper end of the 95% Wilson interval of the win rate."""
    mean_score: float | None
    """Mean score of the won games (None without wins)."""
    mean_score_low: float | None
    """Lower end of the 95% interval (Student's t) of the mean score (None with fewer than two wins, or when every
    win scored the same: no spread, no interval)."""
    mean_score_high: float | None
    """Upper end of that interval."""
    reused: bool
    """An existing run with the same settings was reused, not played again."""

    @property
    def score_per_deal(self) -> float:
        """Mean score over all its games, a lost game counting 0 (what a player scores per deal dealt)."""
        return score_per_deal(self.wins, self.mean_score, self.games)


@dataclass(frozen=True)
class Sweep:
    """The result of `sim sweep`: one policy on the same deals under every combination of rule options."""

    policy: str
    """The policy that played every run."""
    n: int
    """Games per run."""
    seed: int
    """The seed shared by every run, so each combination plays the same deals."""
    options: tuple[str, ...]
    """The swept rule options, in the order given."""
    rows: tuple[SweepRow, ...]
    """One row per combination, the first option varying slowest."""
    notes: tuple[str, ...] = field(default=())
    """Lines printed above the table."""
    policy_args: dict = field(default_factory=dict)
    """The policy's arguments, as its runs recorded them (a weights file's absolute path)."""

    @property
    def player(self) -> str:
        """The policy with its arguments, as `sim ls` names it: "heuristic weights=/a/w.json"."""
        return policy_text(self.policy, self.policy_args)

    def header(self) -> str:
        """The line above the table: what was swept, by which policy, on which deals."""
        return (f"Sweep of {', '.join(self.options)}: policy {self.player}, the same {count(self.n, 'deal')} "
                f"(seed {self.seed}) for every combination")

    def table(self) -> Table:
        """One line per combination: its option values, wins, win rate with its interval, mean score, score per
        deal."""
        d = pct_digits(self.n)
        rows = tuple((*r.values, fmt_int(r.games), fmt_int(r.wins), fmt_pct(r.win_rate, d),
                      fmt_ci(r.win_rate_low, r.win_rate_high, d), fmt_num(r.mean_score), fmt_num(r.score_per_deal))
                     for r in self.rows)
        return Table("", (*self.options, "games", "wins", "win rate", "95% CI (Wilson)", "mean score",
                          "score per deal"), rows, align="r" * len(self.options) + "rrrrrr",
                     note="mean score: of the won games. score per deal: over all the games, a lost game counting "
                          "0. Rows follow the order of the --rule options and values.")

    def labels(self) -> list[str]:
        """Each combination as "option=value" lines, for the figure's x axis."""
        return ["\n".join(f"{k}={v}" for k, v in zip(self.options, r.values)) for r in self.rows]

    def text(self) -> str:
        """The sweep as `sim sweep` prints it."""
        return "\n".join([self.header(), *[f"note: {n}" for n in self.notes], "", self.table().text()]) + "\n"

    def markdown(self) -> str:
        """The sweep as a markdown document (--format markdown)."""
        return "\n".join([self.header(), "", *[f"- {n}" for n in self.notes], "", self.table().markdown()]) + "\n"

    def to_dict(self) -> dict:
        """JSON-ready, each row with its option values as keys instead of a `values` list, a number for a
        numeric option (as a run's manifest writes its rules)."""
        d = json_ready(asdict(self))
        default = Rules().as_dict()

        def value(option: str, v):
            return int(v) if isinstance(default.get(option), int) else v

        d["rows"] = [{**{k: value(k, v) for k, v in zip(self.options, r["values"])},
                      **{k: v for k, v in r.items() if k != "values"}, "score_per_deal": row.score_per_deal}
                     for r, row in zip(d["rows"], self.rows)]
        return d

    def render(self, fmt: str) -> str:
        """The sweep as text, markdown or json."""
        return render_as(self, fmt)

    def figure(self):
        """Win rate (with intervals) and mean score of each combination, as a matplotlib figure."""
        from sim.analysis.plots import win_rate_figure

        from sim.analysis.plots import ROWS_ABOVE

        rows = self.rows
        caption = "runs: " + "; ".join(f"{' '.join(label.split())}: {Path(r.path).name}"
                                       for label, r in zip(self.labels(), rows))
        paths = [Path(r.path) for r in rows]
        prefix = os.path.commonprefix([p.name for p in paths]).rstrip("-")
        if len(rows) > ROWS_ABOVE and prefix and len({p.parent for p in paths}) == 1:  # a row each: a wall of names
            caption = (f"runs: the {len(rows)} directories {prefix}* in {paths[0].parent}/, one per row "
                       "(each named in the page's Runs table and the JSON)")
        return win_rate_figure(self.labels(), [r.win_rate for r in rows], [r.win_rate_low for r in rows],
                               [r.win_rate_high for r in rows], [r.mean_score for r in rows],
                               f"{self.player}: win rate by rule options ({count(self.n, 'game')} each, same deals, "
                               f"seed {self.seed})", [r.mean_score_low for r in rows],
                               [r.mean_score_high for r in rows], caption=caption, digits=pct_digits(self.n))


def sweep(policy: str, n: int, option_values: list[tuple[str, list[str]]], seed: int = 0,
          base_rules: Rules | None = None, **run_options) -> Sweep:
    """One run per combination of option values, all on the same deals; their win rates and mean scores.

    The result is the same whether a run was played or reused: which runs were reused is each row's `reused`
    (and `make_runs` notifies it as it goes), not a note above the table.
    """
    base = (base_rules or Rules()).as_dict()
    combos = combinations(option_values)
    try:
        specs = [(policy, Rules.from_strings({**{k: str(v) for k, v in base.items()}, **c})) for c in combos]
    except ValueError as e:
        raise UsageError(str(e)) from None
    made = make_runs(specs, n, seed, **run_options)
    rows = []
    for combo, (path, reused) in zip(combos, made):
        r = load_report(path)
        rows.append(SweepRow(values=tuple(combo.values()), path=str(path), games=r.games, wins=r.wins,
                             win_rate=r.win_rate, win_rate_low=r.win_rate_low, win_rate_high=r.win_rate_high,
                             mean_score=r.score_mean, mean_score_low=r.score_mean_low,
                             mean_score_high=r.score_mean_high, reused=reused))
    args = runner.read_manifest(made[0][0]).get("policy_args") or {}  # as the runs recorded them
    return Sweep(policy=policy, n=n, seed=seed, options=tuple(k for k, _ in option_values), rows=tuple(rows),
                 policy_args=dict(args))
