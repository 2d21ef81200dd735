"""Self-contained HTML pages of `sim report`, `sim compare` and `sim sweep`: tables and embedded figures.

Each page has inline CSS and `data:` images only (no script, no link, no
font or stylesheet from elsewhere), so it opens from disk with no network
and can be mailed or archived as one file. Every page names the command line
that made it, the project's version and the date.
"""

import base64
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from sim.analysis.report import RunReport, header_lines, overview_table, tables
from sim.analysis.tables import Table, count, fmt_int, pct_digits, pp_text, run_names
from sim.version import __version__

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 72em;
       padding: 0 1em; color: #222; line-height: 1.4; overflow-wrap: break-word; }  /* a long run name breaks */
h1 { font-weight: 650; margin-bottom: 0.2em; }
h2 { font-weight: 600; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-weight: 600; margin: 0.2em 0 0.4em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; }
th { background: #f3f3f3; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.l, th.l { text-align: left; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
.meta { color: #555; font-size: 0.85em; margin-top: 0; }
.meta code { background: #f3f3f3; padding: 0.1em 0.3em; border-radius: 3px; }
.note { color: #555; font-size: 0.85em; margin-top: -1em; margin-bottom: 1.5em; max-width: 60em; }
.warning { color: #a00; font-weight: 600; }
ul.notes { color: #555; font-size: 0.8em; margin: -0.6em 0 1em; padding-left: 1.2em; }
.tables { display: flex; flex-wrap: wrap; gap: 0 3em; align-items: flex-start; }
.table { overflow-x: auto; max-width: 100%; }
.pairs { display: flex; flex-wrap: wrap; gap: 1em; margin: 0.5em 0 1em; }
.pair { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em 1em; background: #fcfcfc;
        max-width: 100%; box-sizing: border-box; overflow-x: auto; }
.pair table { margin: 0.3em 0 0.5em; }
.pair p { margin: 0.15em 0; font-size: 0.9em; }
.a-ahead, .b-ahead { color: #111; font-weight: 600; }
.nosig { color: #666; }
figure { margin: 1em 0 1.5em; overflow-x: auto; }
figcaption { color: #555; font-size: 0.85em; position: sticky; left: 0; max-width: calc(100vw - 2em); }
img { max-width: 100%; height: auto; }
@media (max-width: 640px) {  /* a phone: figures at full size, scrolled sideways, and saying so */
  figure img { max-width: none; }
  figure::before { content: "Scroll sideways for the whole figure \\2192"; display: block; position: sticky;
                   left: 0; color: #777; font-size: 0.8em; }
  .table th:first-child, .table td:first-child { position: sticky; left: 0; background: #fff; }
  .table th:first-child { background: #f3f3f3; }
  pre { white-space: pre-wrap; }
}
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
"""

FIGURE_CAPTIONS = {
    "win_rate": "Win rate with its 95% Wilson interval (top, or left with a row per run) and mean score of the "
                "won games with its 95% interval (bottom, or right); both axes start at 0.",
    "paired_difference": "Paired differences, A - B, on the same deals: win rate (95% Bonett-Price interval, "
                         "McNemar's exact p) and mean score over the games both won (95% interval). Black: "
                         "a difference shown (the interval excludes 0 and, for the win rate, p < 0.05), on "
                         "the side of the run ahead; grey: no difference shown. The runs' own colours are in "
                         "the other figures.",
    "score_distribution": "Share of games per score (a won game's score is the cards left in the stock); "
                          "the lost games on the right.",
    "cards_played": "Cards placed before the game ended, as a share of the won and of the lost games.",
    "frontier": "Win rate (95% Wilson interval) against mean score per deal, a lost deal counting 0: up is "
                "safer, right scores more.",
    "best_score": "Best score of each deal found by the solver: solid where it is proven best, hatched where "
                  "a better win may exist; outcome of every deal on the right.",
}
"""What each named figure shows, printed under it on the pages."""


def table_html(t: Table) -> str:
    """A Table as an HTML table, with its title as caption and its note below."""
    cls = ["l" if t.column_align(i) == "l" else "r" for i in range(len(t.headers))]
    out = ['<div class="table"><table>']
    if t.title:
        out.append(f"<caption>{escape(t.title)}</caption>")
    out.append("<tr>" + "".join(f'<th class="{c}">{escape(h)}</th>' for h, c in zip(t.headers, cls)) + "</tr>")
    for row in t.rows:
        out.append("<tr>" + "".join(f'<td class="{c}">{escape(v)}</td>' for v, c in zip(row, cls)) + "</tr>")
    out.append("</table>")
    if t.note:
        out.append('<p class="note">' + "<br>".join(escape(line) for line in t.note.split("\n")) + "</p>")
    out.append("</div>")
    return "\n".join(out)


def image_html(png: bytes, alt: str, caption: str = "") -> str:
    """A PNG embedded as a `data:` image (so the page needs no other file), with an optional caption."""
    data = base64.b64encode(png).decode("ascii")
    under = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{escape(alt)}" src="data:image/png;base64,{data}">{under}</figure>'


def figures_html(figures: dict) -> list[str]:
    """Each named matplotlib figure as an embedded PNG with the caption of its name."""
    from sim.analysis.plots import png_bytes

    return [image_html(png_bytes(fig), figure_alt(name, fig), FIGURE_CAPTIONS.get(name, ""))
            for name, fig in figures.items()]


def figure_alt(name: str, fig) -> str:
    """What a figure shows, for a reader who cannot see it: its name, its panels' titles and the runs it
    draws (its caption line)."""
    titles = [" ".join(ax.get_title().split()) for ax in fig.axes if ax.get_title()]  # a wrapped title in one line
    runs = " ".join(fig.get_suptitle().split())
    return ". ".join(part for part in (name.replace("_", " ").capitalize(), "; ".join(titles), runs) if part)


def provenance(command: str | None, when: datetime | None = None) -> str:
    """The line under a page's title: the command line that made it, the project version and the date."""
    when = when or datetime.now(timezone.utc)
    made = f"<code>{escape(command)}</code>" if command else "the sim library"
    return (f'<p class="meta">Made by {made} &middot; foursquare-sim {escape(__version__)} &middot; '
            f"{when:%Y-%m-%d %H:%M} UTC</p>")


def page(title: str, body: list[str], command: str | None = None, when: datetime | None = None) -> str:
    """A whole self-contained page: title, provenance line, then the body's HTML blocks."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{escape(title)}</h1>\n{provenance(command, when)}\n" + "\n".join(body) + "\n</body>\n</html>\n")


def write_page(path: str | Path, text: str) -> Path:
    """Write a page at `path` (its folders made, and removed again if the write fails) in one atomic rename;
    returns the path."""
    from sim.jobs.files import folders_for, write_atomic

    path = Path(path)
    with folders_for(path):
        write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path


def notes_html(notes) -> str:
    """Lines said above a table (e.g. which runs were reused), as one small list; empty without notes."""
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


# --- paired comparisons ---------------------------------------------------------------------------


def _pp(x: float, digits: int) -> str:
    return "-" if x != x else pp_text(x, digits)


def pair_html(p, n: int) -> str:
    """One pair A, B: the paired 2x2 table of wins (both, A only, B only, neither), the difference
    pA - pB with its 95% interval, McNemar's p and the mean score difference over the games both won."""
    from sim.analysis.compare import p_is

    d = pct_digits(n)
    relation, value = p_is(p.p_value).split(" ", 1)  # "=" or "<", then the value in bold
    neither = p.games - p.both - p.a_only - p.b_only
    # In bold when a side is ahead (black in the paired-difference figure): not green or red, which are
    # runs' colours in the other figures, and the better run is no alarm.
    verdict = (f'<span class="{p.ahead}-ahead">{escape(p.a if p.ahead == "a" else p.b)} wins more deals</span>'
               if p.ahead else f'<span class="nosig">no difference shown ({escape(p.unclear)})</span>')
    rows = [
        f"<h3>{escape(p.a)} vs {escape(p.b)}</h3>",
        "<table>",
        f'<tr><th></th><th class="r">{escape(p.b)} won</th><th class="r">{escape(p.b)} lost</th>'
        '<th class="r">total</th></tr>',
        f'<tr><th class="l">{escape(p.a)} won</th><td class="r">{fmt_int(p.both)} (both)</td>'
        f'<td class="r">{fmt_int(p.a_only)} (A only)</td><td class="r">{fmt_int(p.wins_a)}</td></tr>',
        f'<tr><th class="l">{escape(p.a)} lost</th><td class="r">{fmt_int(p.b_only)} (B only)</td>'
        f'<td class="r">{fmt_int(neither)} (neither)</td><td class="r">{fmt_int(p.games - p.wins_a)}</td></tr>',
        f'<tr><th class="l">total</th><td class="r">{fmt_int(p.wins_b)}</td>'
        f'<td class="r">{fmt_int(p.games - p.wins_b)}</td><td class="r">{fmt_int(p.games)}</td></tr>',
        "</table>",
        f"<p>pA - pB = <b>{_pp(p.diff, d)}</b> (95% paired CI {_pp(p.diff_low, d)} .. "
        f"{_pp(p.diff_high, d)}): {verdict}</p>",
        f"<p>McNemar's exact p {escape(relation)} <b>{escape(value)}</b> on the "
        f"{count(p.a_only + p.b_only, 'game')} "
        "only one of them won"
        + ("" if p.p_holm is None else f"; adjusted for the number of pairs (Holm), p {escape(p_is(p.p_holm))}")
        + "</p>",
    ]
    if p.score_diff is None:
        rows.append("<p>score A - B: no game both won</p>")
    elif p.score_diff_low is None and p.both == 1:
        rows.append(f"<p>score A - B = {p.score_diff:+.2f} on the one game both won</p>")
    elif p.score_diff_low is None:  # every one the same: no spread to measure, no interval (which is no certainty)
        rows.append(f"<p>score A - B = {p.score_diff:+.2f} on each of the {count(p.both, 'game')} both won: "
                    f"no interval</p>")
    else:
        rows.append(f"<p>score A - B = <b>{p.score_diff:+.2f}</b> (95% CI {p.score_diff_low:+.2f} .. "
                    f"{p.score_diff_high:+.2f}) over the {count(p.both, 'game')} both won</p>")
    if p.deal_diff_low is not None:
        rows.append(f"<p>score per deal A - B = <b>{p.deal_diff:+.2f}</b> (95% CI {p.deal_diff_low:+.2f} .. "
                    f"{p.deal_diff_high:+.2f}) over all {count(p.games, 'game')}, a lost game counting 0</p>")
    elif p.deal_diff is not None and p.games > 1:
        rows.append(f"<p>score per deal A - B = {p.deal_diff:+.2f} on each of the {count(p.games, 'game')}, a lost "
                    f"game counting 0: no interval</p>")
    return '<div class="pair">' + "\n".join(rows) + "</div>"


def comparison_html(comparison, runs_table: bool = True) -> list[str]:
    """A Comparison's blocks: its header, notes, the Runs table (unless not asked for), and one paired
    table per pair."""
    out = [f"<p>{escape(comparison.header())}</p>", notes_html(comparison.notes)]
    runs, pairs = comparison.tables()
    if runs_table:
        out.append(table_html(runs))
    out.append('<div class="pairs">' + "\n".join(pair_html(p, comparison.n) for p in comparison.pairs) + "</div>")
    out.append("<details><summary>All pairs in one table</summary>" + table_html(pairs) + "</details>")
    return out


# --- the pages ---------------------------------------------------------------------------------------


def report_page(reports: list[RunReport], figures: dict, command: str | None = None, comparison=None,
                unpaired: str = "", title: str = "Foursquare run report") -> str:
    """`sim report --html`: overview and win-rate chart, the paired comparison of several runs (or why
    there is none), the other figures, then each run's tables. `figures` are named matplotlib figures."""
    figures = dict(figures)
    body = []
    if len(reports) > 1:
        body.append(table_html(overview_table(reports)))
    body += figures_html({k: figures.pop(k) for k in ("win_rate",) if k in figures})
    if len(reports) > 1:
        body.append("<h2>Paired comparison</h2>")
        if comparison is not None:
            body += comparison_html(comparison, runs_table=False)
            body += figures_html({k: figures.pop(k) for k in ("paired_difference",) if k in figures})
        else:
            body.append(f'<p class="note">No paired comparison: {escape(unpaired)}</p>')
    body.append("<h2>Distributions</h2>")
    body += figures_html(figures)
    for name, r in zip(run_names(r.path for r in reports), reports):
        body.append(f"<h2>{escape(name)}</h2>")
        body.append("<pre>" + escape("\n".join(header_lines(r))) + "</pre>")
        body += [f'<p class="warning">Warning: {escape(w)}</p>' for w in r.warnings]
        body.append('<div class="tables">')
        body += [table_html(t) for t in tables(r)]
        body.append("</div>")
    return page(title, body, command)


def compare_page(comparison, figures: dict, command: str | None = None) -> str:
    """`sim compare --html`: the runs, the paired table of each pair with its difference and McNemar's p,
    and the figures (win rates, paired differences, overlaid score distributions)."""
    figures = dict(figures)
    body = comparison_html(comparison)
    body += figures_html({k: figures.pop(k) for k in ("paired_difference", "win_rate") if k in figures})
    body += figures_html(figures)
    body.append("<h2>Runs</h2>")
    body.append(table_html(Table("", ("run", "directory", "policy", "rules"), tuple(
        (a.label, a.path, a.policy, ", ".join(f"{k}={v}" for k, v in a.rules.items())) for a in comparison.arms),
        align="llll")))
    return page("Foursquare paired comparison", body, command)


def sweep_page(sweep, figures: dict, command: str | None = None) -> str:
    """`sim sweep --html`: the table of combinations and the win-rate and mean-score chart."""
    body = [f"<p>{escape(sweep.header())}</p>", notes_html(sweep.notes)]
    body.append(table_html(sweep.table()))
    body += figures_html(figures)
    body.append(table_html(Table("Runs", (*sweep.options, "directory"),
                                 tuple((*r.values, r.path) for r in sweep.rows), align="l" * (len(sweep.options) + 1))))
    return page("Foursquare rule sweep", body, command)


def solve_page(summaries, figures: dict, command: str | None = None, comparison=None, unpaired: str = "") -> str:
    """`sim report --html` on solve runs: the overview and paired comparison of several (or why there is none),
    the best-score figure, then each run's summary as text."""
    from sim.analysis.report import solve_overview_table, solve_report_text

    body = []
    if len(summaries) > 1:
        body.append(table_html(solve_overview_table(summaries)))
        body.append("<h2>Paired comparison</h2>")
        if comparison is not None:
            body += comparison_html(comparison, runs_table=False)
        else:
            body.append(f'<p class="note">No paired comparison: {escape(unpaired)}</p>')
    body += figures_html(figures)
    for name, r in zip(run_names(r.path for r in summaries), summaries):
        body.append(f"<h2>{escape(name)} (sim solve)</h2>")
        body.append("<pre>" + escape(solve_report_text(r)) + "</pre>")
    return page("Foursquare solve report", body, command)
