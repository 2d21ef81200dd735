"""Tables and number formats shared by every output of the analysis layer (text, Markdown, HTML, JSON)."""

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

from sim.engine.rules import Rules
from sim.stats import pct_text  # noqa: F401  (here too: the tables' formats)


@dataclass(frozen=True)
class Table:
    """A small table of already formatted cells, rendered as aligned text, Markdown or HTML."""

    title: str
    """Shown above the table; empty for none."""
    headers: tuple[str, ...]
    """Column headings."""
    rows: tuple[tuple[str, ...], ...]
    """Formatted cells, one tuple per line, as many as `headers`."""
    align: str = ""
    """One letter per column, "l" or "r"; default: first column left, the others right."""
    note: str = ""
    """Lines printed under the table (definitions, caveats), one per line of the text."""

    def column_align(self, i: int) -> str:
        """Alignment of column i: "l" or "r"."""
        if i < len(self.align):
            return self.align[i]
        return "l" if i == 0 else "r"

    def text(self, indent: str = "", width: int = 0) -> str:
        """Aligned columns; the note is wrapped at `width` when given."""
        cols = len(self.headers)
        widths = [max([len(self.headers[i])] + [len(r[i]) for r in self.rows]) for i in range(cols)]

        def line(cells):
            parts = [c.ljust(w) if self.column_align(i) == "l" else c.rjust(w)
                     for i, (c, w) in enumerate(zip(cells, widths))]
            return (indent + "  ".join(parts)).rstrip()

        out = [self.title] if self.title else []
        out.append(line(self.headers))
        out.append(indent + "  ".join("-" * w for w in widths))
        out.extend(line(r) for r in self.rows)
        if self.note:
            for line in self.note.split("\n"):
                out += textwrap.wrap(line, width) if width > 0 else [line]
        return "\n".join(out)

    def markdown(self) -> str:
        """A markdown table (| escaped), the title in bold above it and the note below."""
        def esc(s):
            return s.replace("|", "\\|")

        out = [f"**{self.title}**", ""] if self.title else []
        out.append("| " + " | ".join(esc(h) for h in self.headers) + " |")
        out.append("|" + "|".join(" --- " if self.column_align(i) == "l" else " ---: " for i in range(len(self.headers))) + "|")
        out.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in self.rows)
        if self.note:
            for line in self.note.split("\n"):
                out += ["", line]
        return "\n".join(out)


def count(k: int, noun: str) -> str:
    """"1 game", "2,000 games": a count with its noun, singular for one."""
    return f"{k:,} {noun}" if k == 1 else f"{k:,} {noun}s"


def fmt_int(k: int | None) -> str:
    """A count with thousands separators; "-" for none."""
    return "-" if k is None else f"{k:,}"


def pp_text(x: float, digits: int = 2) -> str:
    """A difference of two shares in percentage points, with its sign ("-74.44 pp"): a difference of rates is
    not a percentage of anything. Digits as in `pct_text`."""
    return pct_text(x, digits, signed=True)[:-1] + " pp"


def fmt_pct(x: float | None, digits: int = 2) -> str:
    """A share as a percentage (see `pct_text`); "-" when undefined (None or NaN)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else pct_text(x, digits)


def fmt_num(x: float | None, digits: int = 2) -> str:
    """A number with fixed decimals; "-" when undefined (a mean score without wins)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def fmt_ci(low: float, high: float, digits: int = 2) -> str:
    """An interval of shares as "low% .. high%"; "-" when undefined (no games)."""
    if math.isnan(low):
        return "-"
    return f"{pct_text(low, digits)} .. {pct_text(high, digits)}"


def pct_digits(games: int) -> int:
    """Decimals of a percentage worth showing for this many games (more games, narrower intervals)."""
    return 2 if games < 1_000_000 else 3 if games < 100_000_000 else 4


def run_names(paths) -> list[str]:
    """What names each run in tables and figures: its directory's name, or, when two runs share one
    (xa/g and xb/g), every run's path as given, so that no two rows look alike."""
    paths = list(paths)
    names = [Path(p).name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def policy_text(policy: str, args: dict | None = None) -> str:
    """A policy with the arguments it played with, as `sim ls` shows it ("heuristic weights=/a/w.json"): two runs
    of one policy with other arguments are other players."""
    words = " ".join(f"{k}={v}" for k, v in sorted((args or {}).items()))
    return f"{policy} {words}" if words else policy


def rules_text(rules: dict) -> str:
    """The non-default rule options as text, or "default"."""
    default = Rules().as_dict()
    changed = [f"{k}={v}" for k, v in rules.items() if default.get(k) != v]
    return ", ".join(changed) if changed else "default"
