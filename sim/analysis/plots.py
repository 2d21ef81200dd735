"""Figures of runs, comparisons and sweeps (matplotlib, Agg backend, no pyplot).

matplotlib is imported inside the functions, so `import sim` and the
commands that draw nothing stay fast. Figures are built on
`matplotlib.figure.Figure` with an Agg canvas: no global pyplot state, no
display needed.
"""

import io
from pathlib import Path

DPI = 110


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _labels(reports) -> list[str]:
    names = [r.name for r in reports]
    if len(set(names)) < len(names):
        names = [r.path for r in reports]
    return names


def score_distribution_figure(reports):
    """Share of games per score (wins), and the lost games in their own panel; several runs side by side."""
    import numpy as np

    fig = _figure(10, 4.5)
    grid = fig.add_gridspec(1, 2, width_ratios=[6, 1])
    ax, ax_lost = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    top = max(s for r in reports for s, _ in r.score_counts)
    x = np.arange(top + 1)
    k = len(reports)
    width = 0.8 / k
    for i, (r, label) in enumerate(zip(reports, _labels(reports))):
        counts = dict(r.score_counts)
        share = np.array([counts.get(s, 0) for s in x]) / max(r.games, 1)
        offset = (i - (k - 1) / 2) * width
        bars = ax.bar(x + offset, share * 100, width, label=label)
        ax_lost.bar([offset], [100 * r.losses / max(r.games, 1)], width, color=bars.patches[0].get_facecolor())
    ax.set_xticks(x)
    ax.set_xlabel("score (cards left in the stock at a win)")
    ax.set_ylabel("% of games")
    ax.set_title("Score distribution of won games")
    ax.grid(axis="y", alpha=0.3)
    if k > 1:
        ax.legend(fontsize="small")
    ax_lost.set_xticks([0], ["lost"])
    ax_lost.set_xlim(-0.5, 0.5)
    ax_lost.set_ylim(0, 100)
    ax_lost.set_title("Lost")
    ax_lost.set_ylabel("% of games")
    ax_lost.grid(axis="y", alpha=0.3)
    return fig


def cards_played_figure(reports):
    """Distribution of cards played, won and lost games in two panels, one line per run."""
    fig = _figure(10, 4)
    axes = fig.subplots(1, 2, sharex=True)
    for r, label in zip(reports, _labels(reports)):
        for ax, pairs, total in ((axes[0], r.cards_played_wins, r.wins), (axes[1], r.cards_played_losses, r.losses)):
            if pairs and total:
                xs, ks = zip(*pairs)
                ax.plot(xs, [100 * k / total for k in ks], marker="o", markersize=3, label=label)
    for ax, title in zip(axes, ("Won games", "Lost games")):
        ax.set_title(f"Cards played: {title.lower()}")
        ax.set_xlabel("cards played")
        ax.set_ylabel(f"% of {title.split()[0].lower()} games")
        ax.grid(alpha=0.3)
    if len(reports) > 1:
        axes[0].legend(fontsize="small")
    return fig


def win_rate_figure(labels, rates, lows, highs, scores, title: str):
    """Win rate with 95% error bars and mean score, one point per run (sweeps and comparisons)."""
    import numpy as np

    fig = _figure(max(6, 0.9 * len(labels) + 3), 5.5)
    ax, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    x = np.arange(len(labels))
    rates, lows, highs = (100 * np.asarray(v, float) for v in (rates, lows, highs))
    ax.errorbar(x, rates, yerr=[rates - lows, highs - rates], fmt="o", capsize=4)
    ax.set_ylabel("win rate, % (95% CI)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax2.bar(x, [np.nan if s is None else s for s in scores], color="tab:gray")
    ax2.set_ylabel("mean score (wins)")
    ax2.set_xticks(x, labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax2.grid(axis="y", alpha=0.3)
    return fig


def png_bytes(fig) -> bytes:
    """A figure as PNG bytes, for embedding in the HTML report."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def save_png(fig, path: str | Path) -> Path:
    """Write a figure as a PNG at `path` (its directory created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)
    return path


def report_figures(reports) -> dict:
    """The report's figures by file stem."""
    return {"score_distribution": score_distribution_figure(reports),
            "cards_played": cards_played_figure(reports)}


def write_report_pngs(reports, directory: str | Path) -> list[Path]:
    """score_distribution.png and cards_played.png in `directory` (created); several runs share each figure."""
    directory = Path(directory)
    return [save_png(fig, directory / f"{name}.png") for name, fig in report_figures(reports).items()]
