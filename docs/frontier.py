"""The frontier figure: win rate against mean score per deal, one point per policy.

    sim compare --policy random ... -n 20000 --seed 2026 --format json > big.json
    sim compare --policy rollout ... -n 1000 --seed 2026 --format json > small.json
    python docs/frontier.py big.json small.json -o docs/frontier.png

Each policy is taken from the first file that has it (list the largest
comparison first). The mean score per deal counts a lost deal as 0; the
bars are the win rate's 95% Wilson interval. The gap between the online
policies and the oracle is what not seeing the stock costs.
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def points(paths: list[str]) -> list[dict]:
    """(policy, games, win rate and its interval, mean score per deal) of each policy, first file first."""
    seen = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for arm in data["arms"]:
            if arm["policy"] in seen:
                continue
            per_deal = arm["win_rate"] * (arm["mean_score"] or 0.0)
            seen[arm["policy"]] = dict(policy=arm["policy"], games=arm["games"], win_rate=arm["win_rate"],
                                       low=arm["win_rate_low"], high=arm["win_rate_high"], per_deal=per_deal)
    return list(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_json", nargs="+", help="output of sim compare --format json")
    parser.add_argument("-o", "--out", default="docs/frontier.png")
    args = parser.parse_args()
    pts = points(args.compare_json)
    fig, (full, zoom) = plt.subplots(1, 2, figsize=(11, 4.8), dpi=120, gridspec_kw={"width_ratios": [1, 1.3]})
    offsets = {"rollout": (6, -14), "lookahead": (6, -14), "oracle": (-60, -16)}
    for ax, zoomed in ((full, False), (zoom, True)):
        for p in pts:
            if zoomed and p["win_rate"] < 0.95:
                continue
            online = p["policy"] != "oracle"
            ax.errorbar(p["per_deal"], 100 * p["win_rate"],
                        yerr=[[100 * (p["win_rate"] - p["low"])], [100 * (p["high"] - p["win_rate"])]],
                        fmt="o" if online else "*", ms=7 if online else 13, capsize=3,
                        color="tab:blue" if online else "tab:red")
            if zoomed or p["win_rate"] < 0.95:
                ax.annotate(f"{p['policy']} ({p['games']:,})", (p["per_deal"], 100 * p["win_rate"]),
                            textcoords="offset points", xytext=offsets.get(p["policy"], (6, 6)) if zoomed else (6, 6),
                            fontsize=9)
        ax.set_xlabel("mean score per deal (a lost deal counts 0)")
        ax.grid(alpha=0.3)
    full.set_ylabel("win rate (%), 95% Wilson interval")
    full.set_xlim(-1, 25)
    full.set_ylim(-3, 103)
    full.set_title("all policies")
    zoom.set_title("the strong ones (zoomed)")
    online = [p for p in pts if p["policy"] != "oracle"]
    oracle = [p for p in pts if p["policy"] == "oracle"]
    if online and oracle:
        best = max(online, key=lambda p: p["per_deal"])
        y = 100 * best["win_rate"] - 0.6
        zoom.annotate("", xy=(oracle[0]["per_deal"], y), xytext=(best["per_deal"], y),
                      arrowprops=dict(arrowstyle="<->", color="grey"))
        zoom.text((best["per_deal"] + oracle[0]["per_deal"]) / 2, y - 0.35,
                  f"not seeing the stock: {oracle[0]['per_deal'] - best['per_deal']:.1f} points per deal",
                  ha="center", fontsize=9, color="grey")
    fig.suptitle("What not seeing the stock costs (deals of seed 2026; deals per policy in brackets)")
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
