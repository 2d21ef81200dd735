"""Decks from a file (`sim run --deals FILE`): Parquet or JSON lines with a `deck` column."""

import codecs
import hashlib
import io
import json
from pathlib import Path

import numpy as np

from sim import kernels as K
from sim.engine.cards import validate_deck, validate_decks


class UnreadableDealFile(ValueError):
    """A deal file that is there but cannot be read (no permission, an I/O error): nothing is known of its decks,
    so a resume must not call it changed."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"deal file {str(path)!r} cannot be read: {reason}")
        self.reason = reason


def file_digest(path: Path) -> str:
    """SHA-256 of a deal file, recorded in the manifest so a resume can tell the decks changed."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_JSON_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
"""What a line of a deal file holds when it is not an object, for its error."""


def _json_text(path: Path, data: bytes) -> str:
    """The text of a JSON lines file: UTF-8, as JSON is, with or without the byte order mark that Windows tools
    write first; ValueError naming the line of a byte that is not UTF-8."""
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):  # what Windows PowerShell 5 writes by default
        raise ValueError(f"{path}: is UTF-16 text; JSON lines are UTF-8 (save it as UTF-8)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
        raise ValueError(f"{path}: line {line} is not UTF-8 text (byte {data[e.start]:#04x} at offset "
                         f"{e.start})") from None


def _where(row: int, lines: list[int] | None) -> str:
    """Row `row` of a deal file, with its line in a JSON lines file (blank lines make the two differ)."""
    return f"row {row}" if lines is None else f"row {row} (line {lines[row]})"


def _raw_decks(path: Path, data: bytes):
    """The decks in `data`, the bytes of the deal file `path` (whose suffix says how to read them): a list, or a
    Parquet file's polars column; and the line each one is on (None for Parquet), for errors."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import polars as pl

        try:
            frame = pl.read_parquet(io.BytesIO(data))
        except Exception as e:  # polars raises its own errors for a file that is not Parquet
            raise ValueError(f"{path}: not a readable Parquet file ({type(e).__name__})") from None
        if "deck" not in frame.columns:
            raise ValueError(f"{path}: no column 'deck' (columns: {', '.join(frame.columns)})")
        return frame["deck"], None
    if suffix in (".jsonl", ".ndjson", ".json"):
        decks, lines = [], []
        with io.StringIO(_json_text(path, data), newline=None) as f:  # lines as open(path) splits them
            for row, line in enumerate(f):
                if not line.strip():
                    continue
                lines.append(row + 1)
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}: {_where(len(decks), lines)} is not JSON: {e.msg}") from None
                if not isinstance(record, dict):  # a bare deck, or the whole file as one JSON list
                    kind = _JSON_KINDS.get(type(record), "value")
                    raise ValueError(f"{path}: {_where(len(decks), lines)} is a JSON {kind}, not {{\"deck\": [...]}} "
                                     "(one deck per line)")
                if "deck" not in record:
                    raise ValueError(f"{path}: {_where(len(decks), lines)} has no key 'deck'")
                decks.append(record["deck"])
        return decks, lines
    raise ValueError(f"{path}: unknown deal file type {suffix!r}; use .parquet or .jsonl")


def _at_once(raw) -> np.ndarray | None:
    """The decks as one array, all checked at once, when every one is 40 integer ranks of a right deck; else None,
    and the check deck by deck says what is wrong, and where.

    Parquet decks as `--record-deals` writes them are read about 15 times as fast so, JSON lines about twice
    (benchmarks/deal_files.py).
    """
    import polars as pl

    if isinstance(raw, pl.Series):
        dtype = raw.dtype
        if not isinstance(dtype, (pl.List, pl.Array)) or not dtype.inner.is_integer() or raw.null_count():
            return None
        if isinstance(dtype, pl.List):
            if (raw.list.len() != K.DECK_SIZE).any():
                return None
            flat = raw.explode()
        else:
            if dtype.size != K.DECK_SIZE:
                return None
            flat = raw.arr.explode()
        if flat.null_count():
            return None
        array = flat.to_numpy().reshape(len(raw), K.DECK_SIZE)
    else:
        # JSON's true and false would read as 1 and 0 in an array of numbers: a deck holding anything but plain
        # ints goes deck by deck, which refuses them.
        if any(type(deck) is not list or any(type(v) is not int for v in deck) for deck in raw):
            return None
        try:
            array = np.array(raw)
        except (ValueError, OverflowError):  # decks of other lengths; ranks beyond int64
            return None
        if array.ndim != 2 or array.shape[1] != K.DECK_SIZE or array.dtype.kind not in "iu":
            return None
    try:
        return validate_decks(array)
    except ValueError:
        return None


def read_deals(path) -> tuple[np.ndarray, str]:
    """Every deck of the file as an (n, 40) uint8 array, each validated, and the SHA-256 of the bytes they were
    read from.

    Game i is row i. A bad deck raises ValueError with its row number (and line) and what is wrong. One read of
    the file gives both: a file replaced while it is read (a large one takes seconds) is never recorded with the digest
    of other decks than those played, nor taken for the recorded one on resume.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"deal file {str(path)!r} is a directory, not a file of decks")
    if not path.exists():
        raise ValueError(f"deal file {str(path)!r} does not exist")
    if not path.is_file():  # a FIFO or a device: reading it may never end
        raise ValueError(f"deal file {str(path)!r} is not a regular file")
    try:
        data = path.read_bytes()
    except OSError as e:  # no permission, an I/O error: bad input, not a failure of the run
        raise UnreadableDealFile(path, e.strerror or str(e)) from None
    raw, lines = _raw_decks(path, data)
    if not len(raw):
        raise ValueError(f"{path}: holds no decks")
    decks = _at_once(raw)
    if decks is not None:
        return decks, hashlib.sha256(data).hexdigest()
    if not isinstance(raw, list):
        raw = raw.to_list()
    decks = np.empty((len(raw), K.DECK_SIZE), np.uint8)
    for row, deck in enumerate(raw):
        try:
            decks[row] = validate_deck(deck if deck is not None else ())
        except ValueError as e:
            raise ValueError(f"{path}: {_where(row, lines)}: {e}") from None
    return decks, hashlib.sha256(data).hexdigest()
