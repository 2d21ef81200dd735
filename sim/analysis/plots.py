"""Figures of runs, comparisons, sweeps and solve runs (matplotlib, Agg backend, no pyplot).

matplotlib is imported inside the functions, so `import sim` and the
commands that draw nothing stay fast. Figures are built on
`matplotlib.figure.Figure` with an Agg canvas: no global pyplot state, no
display needed.

Every figure names the runs it shows (a caption line at the top), every
legend lists every run (a run with nothing to draw in a panel is listed as
such), bars carry their values, value axes start at 0, and every mean or
rate carries its 95% interval. The same figures go into PNG files
(`--png DIR`) and into the HTML pages.

A run's colour is its place in the list of runs the command was given,
the order of the legends and the tables (`_colour`): every figure of one
report draws a run in one colour, and the first run is blue. A colour
drawn from the run's name instead would follow a run from one report to
another, but two runs of one figure could then share a colour, and the
legend's colours would follow no order.
"""

import io
import math
import textwrap
from pathlib import Path

from sim.analysis.tables import count, fmt_ci, fmt_pct, pct_digits, pct_text, run_names

DPI = 110
CAPTION_CHAR_PX = 7.3
"""Width of a character of a figure's caption, in pixels at DPI: its lines are wrapped to the figure's width."""


LABEL_BOX = {"boxstyle": "square,pad=0.3", "facecolor": "white", "edgecolor": "none"}
"""Behind a label written across the plot, so that grid lines and the zero line do not run through it."""


SHOWN = "#111111"
"""A paired difference the games show."""
NOT_SHOWN = "#9a9a9a"
"""A paired difference they do not."""


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


RUN_COLOURS = 20
"""Runs that get a colour each: tab10's ten colours, then their ten lighter pairs from tab20. tab10 alone gave
the eleventh run the first one's colour, the twelfth the second's."""


def _colour(i: int) -> str:
    """The colour of the i-th run (0 first): the first ten as matplotlib's default cycle draws them."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    tab20 = colormaps["tab20"].colors  # each tab10 colour, then its lighter pair
    j = i % RUN_COLOURS
    return to_hex(tab20[2 * j] if j < 10 else tab20[2 * (j - 10) + 1])


def _caption(fig, text: str) -> None:
    """The runs a figure shows, as a small line (wrapped) above its panels.

    Each line is measured as the figure will draw it: a width per character
    is only an estimate, and directory names are wider than most text.
    """
    if not text:
        return
    lines = _wrapped(fig, text, "small", 0.97 * fig.get_figwidth() * fig.dpi)
    fig.suptitle("\n".join(lines), fontsize="small", color="#333", x=0.01, ha="left")


def _wrapped(fig, text: str, size, room: float) -> list[str]:
    """`text` in lines no wider than `room` pixels at font `size`, as `fig` draws them."""
    from matplotlib.font_manager import FontProperties

    font = FontProperties(size=size)
    renderer = fig.canvas.get_renderer()

    def fits(line: str) -> bool:
        return renderer.get_text_width_height_descent(line, font, ismath=False)[0] <= room

    lines, line = [], ""
    for word in text.split():
        while not fits(word):  # a word wider than the figure (a long directory name) is cut where it must be
            cut = max(k for k in range(1, len(word) + 1) if k == 1 or fits(word[:k]))
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{line} {word}" if line else word
        if fits(candidate):
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def _title(ax, text: str) -> None:
    """A panel's title, wrapped to the panel's width as laid out, so that no end of it is cut at the figure's
    edge (a title is centred over its panel, which the axis labels push to the right)."""
    fig = ax.get_figure()
    fig.draw_without_rendering()  # lays the figure out: the panel's width is known
    title = ax.set_title(text)
    room = ax.get_window_extent().width
    title.set_text("\n".join(_wrapped(fig, text, title.get_fontsize(), room)))


def _labels(reports) -> list[str]:
    return run_names(r.path for r in reports)


def _rules_words(rules: dict) -> str:
    from sim.analysis.tables import rules_text

    text = rules_text(rules)
    return "default rules" if text == "default" else text


def run_caption(reports) -> str:
    """What runs a figure shows: each run's directory with its policy, games, seed and rules."""
    parts = [f"{name} ({r.player}, {count(r.games, 'game')}, seed {r.seed}, {_rules_words(r.rules)})"
             for name, r in zip(_labels(reports), reports)]
    return ("run: " if len(parts) == 1 else "runs: ") + "; ".join(parts)


def _percent(x: float) -> str:
    """A share of games or deals on a figure, in %: one decimal, so that the values of a panel line up (3
    significant digits wrote 15.4% beside 6.46%); more near 0 and 100% (`pct_text`: 99.995% of games won is
    not 100.0%). A win rate is written as its table writes it (`_rate_label`)."""
    if math.isnan(x):
        return "-"
    return pct_text(x / 100, 1)


def _score_ticks(ax, scores) -> None:
    """A tick at every score, labelled at each of up to 26 scores (0 to 24 under the default rules) and at every
    other one beyond: rule options allow scores up to 36, and 37 labels ran into each other ("101112")."""
    scores = list(scores)
    step = 1 + (len(scores) - 1) // 26
    ax.set_xticks(scores[::step])
    ax.set_xticks(scores, minor=True)


def score_distribution_figure(reports, labels=None, overlay: bool = False, caption: str | None = None):
    """Share of games per score (wins), and the lost games in their own panel, one colour per run.

    Several runs are drawn side by side, or with `overlay` as overlaid
    outlines (for comparisons). The legend lists every run; the lost panel
    prints each run's share.
    """
    import numpy as np

    labels = list(labels or _labels(reports))
    fig = _figure(10, 4.6)
    grid = fig.add_gridspec(1, 2, width_ratios=[6, 1.3])
    ax, ax_lost = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    top = max(s for r in reports for s, _ in r.score_counts)
    x = np.arange(top + 1)
    k = len(reports)
    width = 0.8 / k
    lost_shares = []
    for i, (r, label) in enumerate(zip(reports, labels)):
        counts = dict(r.score_counts)
        share = 100 * np.array([counts.get(s, 0) for s in x]) / max(r.games, 1)
        name = f"{label}: {r.wins:,} wins of {r.games:,}" + ("" if r.wins else " (no score to draw)")
        if overlay:
            ax.stairs(share, np.arange(top + 2) - 0.5, color=_colour(i), linewidth=1.8, label=name,
                      fill=False)
            ax.stairs(share, np.arange(top + 2) - 0.5, color=_colour(i), alpha=0.12, fill=True)
        else:
            offset = (i - (k - 1) / 2) * width
            ax.bar(x + offset, share, width, label=name, color=_colour(i))
        lost_shares.append(100 * r.losses / max(r.games, 1))
    _score_ticks(ax, range(top + 1))
    ax.set_xlim(-0.7, top + 0.7)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("score (cards left in the stock at a win)")
    ax.set_ylabel("% of games")
    ax.set_title("Score distribution of won games")
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(top=1.15 * ax.get_ylim()[1])  # room for the legend
    if not any(r.wins for r in reports):  # no bar at all: said in the panel, with no invented scale of shares
        ax.set_yticks([])
        ax.annotate("no game was won: no score to draw", (0.5, 0.5), xycoords="axes fraction", ha="center",
                    va="center", color="#555", bbox=LABEL_BOX)
    positions = np.arange(k)
    bars = ax_lost.bar(positions, lost_shares, 0.7, color=[_colour(i) for i in range(k)])
    ax_lost.bar_label(bars, [_percent(v) for v in lost_shares], fontsize="x-small", padding=2,
                      rotation=90 if k > 3 else 0)
    short = k <= 4 and all(len(label) <= 12 for label in labels)
    if short or k == 1:
        ax_lost.set_xticks(positions, labels, fontsize="x-small", rotation=30 if k > 1 else 0,
                           ha="right" if k > 1 else "center")
    else:
        ax_lost.set_xticks(positions, [str(i + 1) for i in range(k)], fontsize="small")
        ax_lost.set_xlabel("run (legend order)", fontsize="small")
    ax_lost.set_xlim(-0.6, k - 0.4)
    ax_lost.set_ylim(0, 125 if k > 3 else 112)  # turned, a value of 100.0% ran up through the frame into the title
    ax_lost.set_yticks(range(0, 101, 20))
    ax_lost.set_title("Lost games")
    ax_lost.set_ylabel("% of games")
    ax_lost.grid(axis="y", alpha=0.3)
    _panel_legends(fig, [ax])  # six runs named after a heuristic's weights: over the tallest bars otherwise
    _caption(fig, run_caption(reports) if caption is None else caption)
    return fig


def cards_played_figure(reports, labels=None, caption: str | None = None):
    """Distribution of cards played by won and by lost games (two panels), one line per run.

    Both legends list every run; a run with no won (or no lost) game is listed
    as such in that panel instead of being left out.
    """
    labels = list(labels or _labels(reports))
    fig = _figure(10, 4.4)
    axes = fig.subplots(1, 2, sharex=True)
    # Each panel's lines span the same counts of cards, a count no game of a run ended on drawn at 0.
    spans = []
    for pairs_of in (lambda r: r.cards_played_wins, lambda r: r.cards_played_losses):
        counts = [c for r in reports for c, k in pairs_of(r) if k]
        spans.append(range(min(counts), max(counts) + 1) if counts else range(0))
    for i, (r, label) in enumerate(zip(reports, labels)):
        for ax, span, pairs, total, what in ((axes[0], spans[0], r.cards_played_wins, r.wins, "won"),
                                             (axes[1], spans[1], r.cards_played_losses, r.losses, "lost")):
            if pairs and total:
                counts = dict(pairs)
                # clip_on=False: a point at 40 cards, on the frame's right edge, is drawn whole.
                ax.plot(list(span), [100 * counts.get(c, 0) / total for c in span], marker="o", markersize=3,
                        color=_colour(i), label=f"{label} ({total:,} {what})", clip_on=False)
            else:
                ax.plot([], [], marker="o", markersize=3, color=_colour(i), label=f"{label} (no {what} games)")
    from matplotlib.ticker import MaxNLocator

    from sim.engine.cards import DECK_SIZE

    if axes[0].get_xlim()[1] > DECK_SIZE:  # no game plays past the deck's 40 cards: the axis's margin ends there
        axes[0].set_xlim(right=DECK_SIZE)
    for ax, what, span in zip(axes, ("won", "lost"), spans):
        ax.set_title(f"Cards played: {what} games")
        ax.set_xlabel("cards played")
        ax.set_ylabel(f"% of {what} games")
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a count of cards: no half cards
        if not span:  # nothing to draw: said in the panel, with no invented scale
            ax.set_yticks([])
            ax.annotate(f"no game was {what}: nothing to draw", (0.5, 0.5), xycoords="axes fraction", ha="center",
                        va="center", color="#555", bbox=LABEL_BOX)
        ax.grid(alpha=0.3)
    _panel_legends(fig, axes)
    _caption(fig, run_caption(reports) if caption is None else caption)
    return fig


def _panel_legends(fig, axes) -> None:
    """Each panel's legend over its lines (or bars), or, when its runs are many or their names long, under the
    panel with each name wrapped to the panel's width: eight runs, some named after a heuristic's weights, made
    legends wider than their panels, over each other and the lines, and the panels shrank to nothing."""
    long = max(len(text) for ax in axes for text in ax.get_legend_handles_labels()[1]) > 40
    if len(axes[0].get_legend_handles_labels()[1]) <= 4 and not long:
        for ax in axes:
            ax.legend(fontsize="small", loc="best")
        return
    fig.draw_without_rendering()  # laid out: the panels' widths are known
    for ax in axes:
        handles, texts = ax.get_legend_handles_labels()
        room = 0.9 * ax.get_window_extent().width - 40  # the line's sample and the padding beside the text
        ax.legend(handles, ["\n".join(_wrapped(fig, t, "small", room)) for t in texts], fontsize="small",
                  loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    fig.draw_without_rendering()
    under = max(ax.get_legend().get_window_extent().height for ax in axes)
    fig.set_figheight(fig.get_figheight() + under / fig.dpi + 0.2)  # the panels keep their height above them


def _rate(rate: float, digits: int | None) -> str:
    """A win rate, in %: with `digits` decimals as a table writes it, else as `_percent`."""
    return _percent(rate) if digits is None else fmt_pct(rate / 100, digits)


def _rate_label(rate: float, low: float, high: float, digits: int | None, between: str = " ") -> str:
    """A win rate and its interval, in %, each as `_rate` writes it (`fmt_ci`'s interval with `digits`)."""
    if digits is None:
        return f"{_rate(rate, None)}{between}({_percent(low)} .. {_percent(high)})"
    return f"{_rate(rate, digits)}{between}({fmt_ci(low / 100, high / 100, digits)})"


ROWS_ABOVE = 8
"""More runs than this in a win-rate figure, and it has a row per run, read across, not a column each: 48
columns made a figure 6,000 pixels wide that a page shrinks to a strip."""


def _scores(scores, score_lows, score_highs, k: int):
    """Mean scores and their interval's ends as arrays, NaN where there is none."""
    import numpy as np

    return tuple(np.array([np.nan if v is None else v for v in (values or [None] * k)], float)
                 for values in (scores, score_lows, score_highs))


def win_rate_figure(labels, rates, lows, highs, scores, title: str, score_lows=None, score_highs=None,
                    caption: str = "", digits: int | None = None):
    """Win rate with its 95% interval, and mean score of the wins with its 95% interval, one column per run
    (one row per run when there are many, or their labels of several lines do not fit a column).

    Both value axes start at 0; each point and bar carries its value, a win
    rate with `digits` decimals when given, those of the table beside the
    figure (`pct_digits`), so that the two read alike. `labels` name the runs
    on the x axis; `caption` says which runs they are.
    """
    import numpy as np

    k = len(labels)
    width = max(6.5, 1.1 * k + 3)
    # A label wider than its column is wrapped at its spaces (run settings, "node_limit=3000 split_after=0"),
    # and turned only when a single word is still too wide; labels of several lines that do not fit go in rows.
    column = 0.85 * width * DPI / max(k, 1)
    chars = max(8, int(column / (CAPTION_CHAR_PX * 0.9)))
    wrapped = [str(v) if "\n" in str(v) else textwrap.fill(str(v), chars, break_long_words=False) for v in labels]
    longest = max((len(line) for v in wrapped for line in v.splitlines()), default=0)
    rotate = longest * CAPTION_CHAR_PX * 0.9 > column
    # Turned at 30 degrees, a label reaches down half its length: a run named after a heuristic's seven weights
    # or a plugin's path took half the figure's height, squeezing the panels until their axis labels overlapped.
    too_deep = rotate and longest * CAPTION_CHAR_PX * 0.9 / 2 > 0.25 * 5.2 * DPI
    if k > ROWS_ABOVE or too_deep or (rotate and any("\n" in str(v) for v in labels)):
        return _win_rate_rows(labels, rates, lows, highs, scores, title, score_lows, score_highs, caption, digits)
    fig = _figure(width, 5.2)
    ax, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    x = np.arange(k)
    rates, lows, highs = (100 * np.asarray(v, float) for v in (rates, lows, highs))
    for i in range(k):
        ax.errorbar([x[i]], [rates[i]], yerr=[[rates[i] - lows[i]], [highs[i] - rates[i]]], fmt="o",
                    capsize=5, color=_colour(i), markersize=6)
        ax.annotate(_rate_label(rates[i], lows[i], highs[i], digits, "\n"),
                    (x[i], highs[i]), textcoords="offset points", xytext=(0, 4), ha="center", fontsize="x-small")
    top = np.nanmax(highs) if k and not np.all(np.isnan(highs)) else 100
    if top < 80:
        ax.set_ylim(0, min(100, top * 1.25 + 1))
    else:  # room above 100% for the labels; no tick beyond 100%
        ax.set_ylim(0, 122)
        ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("win rate, % (95% CI)")
    ax.grid(axis="y", alpha=0.3)

    means, lo, hi = _scores(scores, score_lows, score_highs, k)
    has_ci = ~np.isnan(lo) & ~np.isnan(means)
    ax2.bar(x, np.nan_to_num(means), 0.6, color=[_colour(i) for i in range(k)], alpha=0.75)
    if has_ci.any():
        ax2.errorbar(x[has_ci], means[has_ci], yerr=[means[has_ci] - lo[has_ci], hi[has_ci] - means[has_ci]],
                     fmt="none", ecolor="#222", capsize=5)
    # Each mean's value above its interval's upper cap (above the bar without one): in the bar's middle, the
    # error bar of a run with few wins ran through it.
    tops = np.where(has_ci, hi, means)
    values = [ax2.annotate(f"{means[i]:.2f}", (x[i], tops[i]), textcoords="offset points", xytext=(0, 3),
                           ha="center", va="bottom", fontsize="x-small")
              for i in np.flatnonzero(~np.isnan(means))]
    for i in np.flatnonzero(np.isnan(means)):  # no bar: said in the panel's middle, not on its axis line
        ax2.annotate("no wins", (x[i], 0.5), xycoords=("data", "axes fraction"), ha="center", va="center",
                     fontsize="x-small", color="#555", bbox=LABEL_BOX)
    ax2.set_ylim(0, max(1.0, np.nanmax(np.where(np.isnan(hi), means, hi)) * 1.15) if not np.all(np.isnan(means))
                 else 1.0)
    if np.all(np.isnan(means)):  # no mean score to draw: no invented scale
        ax2.set_yticks([])
    ax2.set_ylabel("mean score of wins\n(95% CI)")
    ax2.set_xticks(x, labels if rotate else wrapped, rotation=30 if rotate else 0, ha="right" if rotate else "center",
                   fontsize="small")
    ax2.grid(axis="y", alpha=0.3)
    _caption(fig, caption)
    _title(ax, title)
    _room_above(fig, ax2, values)
    return fig


def _room_above(fig, ax, texts) -> None:
    """Grow `ax`'s value axis (from 0) until `texts`, written above their points, end inside its frame."""
    for _ in range(4):
        fig.draw_without_rendering()
        frame = ax.get_window_extent()
        top = max((t.get_window_extent().y1 for t in texts), default=frame.y0)
        if top <= frame.y1 - 2:
            return
        ax.set_ylim(0, ax.get_ylim()[1] * (top - frame.y0) / max(frame.y1 - 2 - frame.y0, 1.0) * 1.02)


def _win_rate_rows(labels, rates, lows, highs, scores, title: str, score_lows, score_highs, caption: str,
                   digits: int | None):
    """`win_rate_figure` with a row per run, first at the top: its label on the left in one line, its win rate
    and mean score side by side, each value written at the right of its panel as in a table. Every other row
    is shaded, so that a row reads across."""
    import numpy as np
    from matplotlib.transforms import blended_transform_factory

    k = len(labels)
    fig = _figure(11, 2.1 + 0.3 * k)
    grid = fig.add_gridspec(2, 2, width_ratios=[3, 2], height_ratios=[0.001, 1])
    ax = fig.add_subplot(grid[1, 0])
    ax2 = fig.add_subplot(grid[1, 1], sharey=ax)
    ax2.tick_params(labelleft=False)
    head = fig.add_subplot(grid[0, :])  # the title, over both panels
    head.axis("off")
    y = np.arange(k)
    rates, lows, highs = (100 * np.asarray(v, float) for v in (rates, lows, highs))
    means, lo, hi = _scores(scores, score_lows, score_highs, k)
    for i in range(k):
        ax.errorbar([rates[i]], [y[i]], xerr=[[rates[i] - lows[i]], [highs[i] - rates[i]]], fmt="o", capsize=3,
                    color=_colour(i), markersize=5)
    has_ci = ~np.isnan(lo) & ~np.isnan(means)
    ax2.barh(y, np.nan_to_num(means), 0.6, color=[_colour(i) for i in range(k)], alpha=0.75)
    if has_ci.any():
        ax2.errorbar(means[has_ci], y[has_ci], xerr=[means[has_ci] - lo[has_ci], hi[has_ci] - means[has_ci]],
                     fmt="none", ecolor="#222", capsize=3)
    values = ([_rate_label(r, a, b, digits) for r, a, b in zip(rates, lows, highs)],
              ["no wins" if np.isnan(m) else f"{m:.2f}" for m in means])
    for panel, texts in zip((ax, ax2), values):
        at = blended_transform_factory(panel.transAxes, panel.transData)
        for row, text in zip(y, texts):
            panel.text(1.02, row, text, transform=at, ha="left", va="center", fontsize="x-small",
                       color="#555" if text == "no wins" else "#222")
        for row in y[1::2]:
            panel.axhspan(row - 0.5, row + 0.5, color="#f2f2f2", zorder=0, linewidth=0)
        panel.grid(axis="x", alpha=0.3)
    top = np.nanmax(highs) if k and not np.all(np.isnan(highs)) else 100
    ax.set_xlim(0, min(100, top * 1.15 + 1) if top < 80 else 101)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_yticks(y, [" ".join(str(v).split()) for v in labels], fontsize="small")
    ax.set_xlabel("win rate, % (95% CI)")
    ax2.set_xlim(0, max(1.0, np.nanmax(np.where(np.isnan(hi), means, hi)) * 1.1) if not np.all(np.isnan(means))
                 else 1.0)
    if np.all(np.isnan(means)):  # no mean score to draw: no invented scale
        ax2.set_xticks([])
    ax2.set_xlabel("mean score of wins (95% CI)")
    _caption(fig, caption)
    _title(head, title)
    return fig


def frontier_figure(labels, rates, lows, highs, per_deal, title: str, caption: str = "", games=None,
                    digits: int | None = None):
    """Win rate (95% interval) against mean score per deal (a lost deal counting 0), one point per run.

    The two aims of play side by side: up is safer, right scores more. When
    strong runs (90% wins or more) crowd the top beside weaker ones, a second
    panel shows them zoomed. `games` (each run's deals) go into the labels; a win rate has `digits` decimals
    when given (its table's), else those of `_percent`.
    """
    import numpy as np

    k = len(labels)
    rates, lows, highs = (100 * np.asarray(v, float) for v in (rates, lows, highs))
    x = np.asarray(per_deal, float)
    names = [str(v) if games is None else f"{v} ({games[i]:,})" for i, v in enumerate(labels)]
    strong = [i for i in range(k) if rates[i] >= 90]
    zoom = len(strong) >= 2 and len(strong) < k
    fig = _figure(12 if zoom else 7.5, 5.4)
    axes = fig.subplots(1, 2, width_ratios=[1, 1.2]) if zoom else [fig.subplots()]
    notes = []
    for ax, shown in zip(axes, [range(k), strong] if zoom else [range(k)]):
        labelled = [i for i in shown if ax is axes[-1] or i not in strong]
        # Runs at the same point (the same games, e.g. two runs that lost every deal) share one label, their
        # names one under the other, not labels printed over each other.
        at = {}
        for i in labelled:
            at.setdefault((float(x[i]), float(rates[i])), []).append(i)
        for i in shown:
            # clip_on=False: a run at 0% and 0 per deal sits on the axes' corner, drawn whole.
            ax.errorbar([x[i]], [rates[i]], yerr=[[rates[i] - lows[i]], [highs[i] - rates[i]]], fmt="o",
                        capsize=4, color=_colour(i), markersize=7, clip_on=False)
        for (px, py), same in at.items():
            text = "\n".join(names[i] for i in same) + f"\n{_rate(py, digits)}, {px:.2f}"
            notes.append((ax, ax.annotate(text, (px, py), textcoords="offset points", xytext=(7, 0), ha="left",
                                          va="center", fontsize="x-small")))
        ax.set_xlabel("mean score per deal (a lost deal counts 0)")
        ax.grid(alpha=0.3)
    right = max(1.0, float(np.nanmax(x)) if k else 1.0)
    axes[0].set_xlim(0, right * 1.25 + 0.5)
    axes[0].set_ylim(0, 105)
    axes[0].set_yticks(range(0, 101, 20))
    axes[0].set_ylabel("win rate, % (95% Wilson interval)")
    if zoom:
        xs = x[strong]
        span = max(1.0, float(xs.max() - xs.min()))
        axes[1].set_xlim(xs.min() - 0.08 * span, xs.max() + 0.3 * span)
        low = float(np.nanmin(lows[strong]))
        axes[1].set_ylim(low - 0.1 * (100.5 - low), 100.0 + 0.1 * (100.5 - low))
        axes[1].set_title("the runs with 90% wins or more, zoomed", fontsize="medium")
    axes[0].set_title(title + (": all runs" if zoom else ""), fontsize="medium")
    _caption(fig, caption)
    _labels_inside(fig, notes)
    return fig


def _labels_inside(fig, notes) -> None:
    """Put a point's label on its left instead when, on its right, it would run past the panel's frame, and
    above its point when, beside it, it would run under the frame's bottom (onto the axis's numbers). A label
    that would then lie over another one of its panel (two runs close together, say two rule variants) is
    moved up until it clears it, so that both read."""
    fig.draw_without_rendering()  # lays the figure out, so that the labels' extents are known
    for ax, note in notes:
        box, frame = note.get_window_extent(), ax.get_window_extent()
        dx, dy = note.xyann
        if box.x1 > frame.x1:
            note.set_horizontalalignment("right")
            dx = -7
        if box.y0 < frame.y0:
            note.set_verticalalignment("bottom")
            dy = 4
        note.xyann = (dx, dy)
    fig.draw_without_rendering()
    placed = []
    for ax, note in sorted(notes, key=lambda an: an[1].get_window_extent().y0):
        moved = True
        while moved:
            moved = False
            box = note.get_window_extent()
            for other in (o for a, o in placed if a is ax):
                above = other.get_window_extent()
                if box.overlaps(above):
                    dx, dy = note.xyann
                    note.xyann = (dx, dy + (above.y1 - box.y0) * 72 / fig.dpi + 1)  # pixels to points, and a gap
                    moved = True
                    break
        placed.append((ax, note))


PAIR_NAME_WIDTH = 30
"""Characters a line of a pair's name takes at most beside the paired-difference rows: a run named after a
heuristic's seven weights took half the figure's width, squeezing the panels until their labels were cut off
and ran over the names."""


def _pair_name(a: str, b: str) -> str:
    """A pair's row name, "A - B", or A over "- B" when long, each wrapped at PAIR_NAME_WIDTH characters."""
    if len(a) + len(b) <= 24:
        return f"{a} - {b}"
    return "\n".join(textwrap.wrap(a, PAIR_NAME_WIDTH) + textwrap.wrap(f"- {b}", PAIR_NAME_WIDTH))


def paired_difference_figure(pairs, n: int, caption: str = ""):
    """Each pair's win-rate difference pA - pB and mean score difference (games both won), with 95% intervals.

    One row per pair (A - B), a line at 0. A win-rate difference is black
    when the games show it (`Pair.ahead`: the interval does not cross 0 and
    McNemar's p, printed beside it, is below 0.05; Holm's adjusted p among
    several pairs), grey otherwise; a score
    difference, black when its interval does not cross 0. Not green and
    red: those are runs' colours in the other figures, and the side that is
    ahead is the side of 0 the point is on.
    """
    import numpy as np

    from sim.analysis.compare import p_is

    k = len(pairs)
    names = [_pair_name(p.a, p.b) for p in pairs]
    lines = max(name.count("\n") + 1 for name in names)
    fig = _figure(10, 1.9 + (0.55 if lines == 1 else 0.35 + 0.2 * lines) * k)
    ax, ax2 = fig.subplots(1, 2, sharey=True)
    y = np.arange(k)[::-1]
    for row, p in zip(y, pairs):
        d, lo, hi = (100 * v for v in (p.diff, p.diff_low, p.diff_high))
        colour = SHOWN if p.ahead else NOT_SHOWN
        ax.errorbar([d], [row], xerr=[[d - lo], [hi - d]], fmt="o", capsize=5, color=colour)
        pp = [pct_text(v, pct_digits(n), signed=True)[:-1] for v in (p.diff, p.diff_low, p.diff_high)]  # as the table
        ax.annotate(f"{pp[0]} pp ({pp[1]} .. {pp[2]}), McNemar p {p_is(p.p_verdict)}"
                    + ("" if p.p_holm is None else " (Holm)"), (0.5, row),
                    xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 8), ha="center",
                    fontsize="x-small", bbox=LABEL_BOX, zorder=3)
        if p.score_diff is not None and p.score_diff_low is not None:
            s, slo, shi = p.score_diff, p.score_diff_low, p.score_diff_high
            colour = SHOWN if slo > 0 or shi < 0 else NOT_SHOWN
            ax2.errorbar([s], [row], xerr=[[s - slo], [shi - s]], fmt="o", capsize=5, color=colour)
            ax2.annotate(f"{s:+.2f} ({slo:+.2f} .. {shi:+.2f}) over {count(p.both, 'game')}", (0.5, row),
                         xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 8),
                         ha="center", fontsize="x-small", bbox=LABEL_BOX, zorder=3)
        elif p.score_diff is not None:  # one game both won (or all with one difference): its point, no interval
            ax2.plot([p.score_diff], [row], "o", color=NOT_SHOWN)
            ax2.annotate(f"{p.score_diff:+.2f} over {count(p.both, 'game')}: no interval", (0.5, row),
                         xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 8),
                         ha="center", fontsize="x-small", bbox=LABEL_BOX, zorder=3)
        else:
            ax2.annotate(f"{count(p.both, 'game')} both won: no interval", (0.5, row),
                         xycoords=("axes fraction", "data"),
                         ha="center", va="center", fontsize="x-small", color="#555", bbox=LABEL_BOX, zorder=3)
    from matplotlib.ticker import MaxNLocator

    for a in (ax, ax2):
        a.xaxis.set_major_locator(MaxNLocator(7, symmetric=True))
        a.axvline(0, color="#222", linewidth=0.8)
        a.grid(axis="x", alpha=0.3)
        lo, hi = a.get_xlim()
        m = 1.25 * max(abs(lo), abs(hi))
        if a is ax:  # a difference of two win rates lies within +-100 points
            m = min(m, 105.0)
        a.set_xlim(-m, m)
    ax.set_yticks(y, names, fontsize="small")
    ax.set_ylim(-0.6, k - 0.2)
    ax.set_xlabel("pA - pB, percentage points (95% paired CI)")
    sizes = {p.games for p in pairs}
    deals = count(sizes.pop(), "deal") if len(sizes) == 1 else "the deals both played"
    ax.set_title(f"Win-rate difference ({deals})", fontsize="medium")
    ax2.set_xlabel("score A - B (95% CI)")
    ax2.set_title("Mean score difference (games both won)", fontsize="medium")
    _caption(fig, caption)
    return fig


def best_score_figure(summaries, caption: str = ""):
    """A solve run's best scores: deals per best score found, proven best or not; and won/lost/unresolved.

    One colour per run; a hatched bar is the part whose best score is not proven.
    """
    import numpy as np

    k = len(summaries)
    fig = _figure(10, 4.6)
    grid = fig.add_gridspec(1, 2, width_ratios=[6, 1.6])
    ax, ax_out = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    scores = sorted({s for r in summaries for s, _, _ in r.score_counts}) or [0]
    x = np.arange(min(scores), max(scores) + 1)
    width = 0.8 / k
    highest = 0.0
    for i, (name, r) in enumerate(zip(run_names(r.path for r in summaries), summaries)):
        found = {s: kk for s, kk, _ in r.score_counts}
        proven = {s: p for s, _, p in r.score_counts}
        d = max(r.deals, 1)
        pr = 100 * np.array([proven.get(s, 0) for s in x]) / d
        un = 100 * np.array([found.get(s, 0) - proven.get(s, 0) for s in x]) / d
        offset = (i - (k - 1) / 2) * width
        ax.bar(x + offset, pr, width, color=_colour(i), label=f"{name}: proven best")
        tops = ax.bar(x + offset, un, width, bottom=pr, color=_colour(i), alpha=0.35, hatch="//",
                      label=f"{name}: best found, not proven")
        ax.bar_label(tops, [_percent(a + b) if a + b else "" for a, b in zip(pr, un)], fontsize="x-small",
                     padding=2, rotation=90 if k > 1 else 0)  # side by side, level labels run into each other
        highest = max(highest, float(np.max(pr + un)))
        outs = [100 * v / d for v in (r.won, r.lost, r.unresolved)]
        pos = np.arange(3) + offset
        bars = ax_out.bar(pos, outs, width, color=_colour(i))
        ax_out.bar_label(bars, [_percent(v) for v in outs], fontsize="x-small", padding=2,
                         rotation=90 if k > 1 else 0)
    _score_ticks(ax, x)
    ax.set_xlabel("best score found (cards left in the stock)")
    ax.set_ylabel("% of deals")
    ax.set_title("Best score of each deal (solver, stock order known)")
    ax.grid(axis="y", alpha=0.3)
    legend = ax.legend(fontsize="small", loc="upper left")
    ax_out.set_xticks(np.arange(3), ["won", "lost", "unresolved"], fontsize="small", rotation=30, ha="right")
    ax_out.set_ylim(0, 125)
    ax_out.set_ylabel("% of deals")
    ax_out.set_title("Outcome")
    ax_out.grid(axis="y", alpha=0.3)
    _caption(fig, caption or ("runs: " if k > 1 else "run: ") + "; ".join(
        f"{name} ({count(r.deals, 'deal')}, "
        f"{'first win only' if r.options.get('first_win') else 'best score sought'})"
        for name, r in zip(run_names(r.path for r in summaries), summaries)))
    # The legend (two lines per run) gets the top of the panel to itself: over the bars, it hid a run's
    # tallest bar and its value. Once the caption is laid out, the scale grows until the bars and their
    # values end below the legend.
    ax.set_ylim(0, highest * 1.15 + 1)
    for _ in range(4):
        fig.draw_without_rendering()
        below = legend.get_window_extent().y0 - 4
        top = max((a.get_window_extent().y1 for a in [*ax.patches, *ax.texts] if a.get_visible()), default=below)
        if top <= below:
            break
        bottom = ax.get_window_extent().y0
        ax.set_ylim(0, ax.get_ylim()[1] * (top - bottom) / max(below - bottom, 1.0) * 1.02)
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= 100])  # the room above is the legend's, not a share
    return fig


def png_bytes(fig) -> bytes:
    """A figure as PNG bytes, for embedding in the HTML pages."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def save_png(fig, path: str | Path) -> Path:
    """Write a figure as a PNG at `path` in one atomic rename, so that a figure already there survives a failed
    write (a full disk); folders it makes for it are removed again if the write fails. Returns the path."""
    from sim.jobs.files import folders_for, write_atomic

    path = Path(path)
    with folders_for(path):
        write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI))
    return path


# --- the figures of each command ----------------------------------------------------------------


def report_win_rate_figure(reports):
    """`sim report`'s win-rate chart: each run's win rate and mean score with their 95% intervals, the win
    rates with the decimals of the report's tables."""
    return win_rate_figure(_labels(reports), [r.win_rate for r in reports], [r.win_rate_low for r in reports],
                           [r.win_rate_high for r in reports], [r.score_mean for r in reports],
                           "Win rate (95% Wilson interval)", [r.score_mean_low for r in reports],
                           [r.score_mean_high for r in reports], caption=run_caption(reports),
                           digits=max(pct_digits(r.games) for r in reports))


def comparison_caption(comparison) -> str:
    """What runs a comparison's figures show: each run's label and its directory (once when they are the same)."""
    return "runs: " + "; ".join(a.label if a.label == Path(a.path).name else f"{a.label}: {Path(a.path).name}"
                                for a in comparison.arms)


def report_figures(reports, comparison=None) -> dict:
    """`sim report`'s figures by file stem; with a Comparison of the runs, its paired differences too."""
    figures = {"win_rate": report_win_rate_figure(reports),
               "score_distribution": score_distribution_figure(reports),
               "cards_played": cards_played_figure(reports)}
    if comparison is not None:
        figures["paired_difference"] = paired_difference_figure(comparison.pairs, comparison.n,
                                                                comparison_caption(comparison))
    return figures


def compare_figures(comparison, reports) -> dict:
    """`sim compare`'s figures by file stem: win rates, paired differences, overlaid score distributions.

    `reports` are the RunReports of the comparison's runs, in the same order
    (None for a solve run: its mean score has no interval here and there is no
    score distribution figure).
    """
    arms = comparison.arms
    labels = [a.label for a in arms]
    caption = comparison_caption(comparison)
    games = all(r is not None for r in reports)
    deals = (f"the same {count(comparison.n, 'deal')}" if comparison.same_size
             else "the same deals\n(" + ", ".join(f"{a.label} {a.games:,}" for a in arms) + ")")
    figures = {
        "win_rate": win_rate_figure(labels, [a.win_rate for a in arms], [a.win_rate_low for a in arms],
                                    [a.win_rate_high for a in arms], [a.mean_score for a in arms],
                                    f"Win rate (95% Wilson interval) on {deals}",
                                    [r and r.score_mean_low for r in reports],
                                    [r and r.score_mean_high for r in reports], caption=caption,
                                    digits=pct_digits(comparison.n)),
        "paired_difference": paired_difference_figure(comparison.pairs, comparison.n, caption),
        "frontier": frontier_figure(labels, [a.win_rate for a in arms], [a.win_rate_low for a in arms],
                                    [a.win_rate_high for a in arms], [a.score_per_deal for a in arms],
                                    "Win rate against score per deal" + ("" if comparison.same_size else
                                                                         " (deals per run in brackets)"),
                                    caption=caption, games=None if comparison.same_size else
                                    [a.games for a in arms], digits=pct_digits(comparison.n)),
    }
    if games:
        figures["score_distribution"] = score_distribution_figure(reports, labels, overlay=True, caption=caption)
    return figures


def sweep_figures(sweep) -> dict:
    """`sim sweep`'s figure by file stem: win rate and mean score of each combination."""
    return {"win_rate": sweep.figure()}


def solve_figures(summaries) -> dict:
    """`sim report`'s figure of solve runs by file stem: the best-score distribution."""
    return {"best_score": best_score_figure(summaries)}
