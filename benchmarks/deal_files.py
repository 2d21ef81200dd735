"""How fast `sim run --deals FILE` reads a deal file: decks per second, Parquet and JSON lines.

    python benchmarks/deal_files.py [-n DECKS]

Writes DECKS shuffled decks (default 1e6) to a Parquet file as `--record-deals`
writes its `deck` column (a list of uint8) and to a JSON lines file, in a
temporary folder, then times `sim.jobs.deal_files.read_deals` on each (the
read, the parse, the check of every deck and the digest; best of 3).
"""

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1e6", help="decks per file (default 1e6)")
    args = parser.parse_args()

    import numpy as np
    import polars as pl

    from sim.errors import parse_count
    from sim.jobs.deal_files import read_deals

    try:
        n = parse_count(args.n, "-n")
    except ValueError as e:
        parser.error(str(e))
    rng = np.random.default_rng(1)
    decks = rng.permuted(np.tile(np.repeat(np.arange(1, 11, dtype=np.uint8), 4), (n, 1)), axis=1)
    with tempfile.TemporaryDirectory() as folder:
        files = {"Parquet": Path(folder) / "decks.parquet", "JSON lines": Path(folder) / "decks.jsonl"}
        pl.DataFrame({"deck": pl.Series(decks.tolist(), dtype=pl.List(pl.UInt8))}).write_parquet(files["Parquet"])
        with open(files["JSON lines"], "w") as f:
            for deck in decks.tolist():
                f.write(json.dumps({"deck": deck}) + "\n")
        for kind, path in files.items():
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                got, _ = read_deals(path)
                best = min(best, time.perf_counter() - t0)
            assert np.array_equal(got, decks)
            print(f"{kind:>10}: {n:,} decks ({path.stat().st_size / 2**20:,.0f} MiB) read in {best:.2f} s, "
                  f"{n / best:,.0f} decks/s")


if __name__ == "__main__":
    main()
