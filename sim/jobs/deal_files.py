"""Decks from a file (`sim run --deals FILE`): Parquet or JSON lines with a `deck` column."""

import hashlib
import json
from pathlib import Path

import numpy as np

from sim import kernels as K
from sim.engine.cards import validate_deck


def file_digest(path: Path) -> str:
    """SHA-256 of a deal file, recorded in the manifest so a resume can tell the decks changed."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _raw_decks(path: Path) -> list:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import polars as pl

        try:
            frame = pl.read_parquet(path)
        except Exception as e:  # polars raises its own errors for a file that is not Parquet
            raise ValueError(f"{path}: not a readable Parquet file ({type(e).__name__})") from None
        if "deck" not in frame.columns:
            raise ValueError(f"{path}: no column 'deck' (columns: {', '.join(frame.columns)})")
        return frame["deck"].to_list()
    if suffix in (".jsonl", ".ndjson", ".json"):
        decks = []
        with open(path) as f:
            for row, line in enumerate(f):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}: row {len(decks)} (line {row + 1}) is not JSON: {e.msg}") from None
                if not isinstance(record, dict) or "deck" not in record:
                    raise ValueError(f"{path}: row {len(decks)} (line {row + 1}) has no key 'deck'")
                decks.append(record["deck"])
        return decks
    raise ValueError(f"{path}: unknown deal file type {suffix!r}; use .parquet or .jsonl")


def load_deals(path) -> np.ndarray:
    """Every deck of the file as an (n, 40) uint8 array, each validated.

    Game i is row i. A bad deck raises ValueError with its row number and what is wrong.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"deal file {str(path)!r} is a directory, not a file of decks")
    if not path.is_file():
        raise ValueError(f"deal file {str(path)!r} does not exist")
    raw = _raw_decks(path)
    if not raw:
        raise ValueError(f"{path}: holds no decks")
    decks = np.empty((len(raw), K.DECK_SIZE), np.uint8)
    for row, deck in enumerate(raw):
        try:
            decks[row] = validate_deck(deck if deck is not None else ())
        except ValueError as e:
            raise ValueError(f"{path}: row {row}: {e}") from None
    return decks
