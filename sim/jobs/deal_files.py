"""Decks from a file (`sim run --deals FILE`): Parquet or JSON lines with a `deck` column."""

import codecs
import hashlib
import io
import json
import re
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


_JSON_LINES = (".jsonl", ".ndjson", ".json")
"""Suffixes of JSON lines deal files."""


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
    if suffix in _JSON_LINES:
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
    (benchmarks/deal_files.py). A JSON lines file of plain deck records does not come here: `_plain_json_lines`
    reads it without json.loads, at 239,303 decks/s against 69,716 through here (`python benchmarks/deal_files.py
    -n 5e5`, the two one after the other, 2 cores shared).
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


def _decks(path: Path, data: bytes) -> np.ndarray:
    """The decks in `data`, the bytes of the deal file `path`, read value by value (JSON lines: `json.loads` on
    each line), each validated; ValueError naming the row (and line) of a bad one."""
    raw, lines = _raw_decks(path, data)
    if not len(raw):
        raise ValueError(f"{path}: holds no decks")
    decks = _at_once(raw)
    if decks is not None:
        return decks
    if not isinstance(raw, list):
        raw = raw.to_list()
    decks = np.empty((len(raw), K.DECK_SIZE), np.uint8)
    for row, deck in enumerate(raw):
        try:
            decks[row] = validate_deck(deck if deck is not None else ())
        except ValueError as e:
            raise ValueError(f"{path}: {_where(row, lines)}: {e}") from None
    return decks


_SPACE = rb"[ \t]*+"
_RANK = rb"[1-9]?[0-9]"  # one or two digits, no leading zero (which JSON refuses): 0..99, a uint8
_PLAIN_DECKS = re.compile(
    rb"(?:[ \t\r\n]*+\{" + _SPACE + rb'"deck"' + _SPACE + rb":" + _SPACE + rb"\[" + _SPACE + _RANK
    + (_SPACE + rb"," + _SPACE + _RANK) * (K.DECK_SIZE - 1)  # written out: a repeated group matches slower
    + _SPACE + rb"\]" + _SPACE + rb"\}" + _SPACE + rb"(?:[\r\n]|\Z))*+[ \t\r\n]*+")
"""JSON lines of plain deck records only: `{"deck": [...]}` with 40 small unsigned integers, JSON's spaces and tabs
between any two tokens, one record per line, lines ended by \n, \r\n or \r, blank lines between. Every such line
is what `json.loads` reads as {"deck": [40 ints]}, and nothing else matches."""

_TO_COMMA = bytes.maketrans(b"]", b",")
_NOT_RANKS = bytes(c for c in range(256) if not (48 <= c < 58 or c in b",]"))
_CHUNK = 1 << 23
"""Bytes of a file matched and parsed at a time (ended at a line's end): the offsets of all its ranks' commas at
once would take about twice the file's size again."""


def _plain_json_lines(data: bytes) -> np.ndarray | None:
    """The decks of a JSON lines file `data` made of plain deck records only (`_PLAIN_DECKS`), all right, read at
    once: `_decks` reads the same decks from it, about 3.4 times as slowly (`_at_once`). None for any other file,
    which `_decks` then reads, saying what is wrong and where."""
    # A match is ASCII, so UTF-8: its text is what `_json_text` decodes, the byte order mark dropped as there.
    body = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
    ranks, start = [], 0
    while start < len(body):
        end = body.find(b"\n", start + _CHUNK) + 1 or len(body)  # a line's end: \r\n is never split
        chunk = body[start:end]
        if not _PLAIN_DECKS.fullmatch(chunk):
            return None
        # Only each rank's digits and the comma or bracket after it are left, as "3,10,...,7,": one or two digits
        # before each comma.
        text = np.frombuffer(chunk.translate(_TO_COMMA, _NOT_RANKS), np.uint8)
        commas = np.flatnonzero(text == ord(","))
        values = text[commas - 1] - np.uint8(ord("0"))
        two = np.diff(commas, prepend=-1) == 3
        values[two] += (text[commas[two] - 2] - np.uint8(ord("0"))) * np.uint8(10)
        ranks.append(values)
        start = end
    decks = np.concatenate(ranks) if ranks else np.empty(0, np.uint8)
    if not len(decks):
        return None
    try:
        return validate_decks(decks.reshape(-1, K.DECK_SIZE))
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
    decks = _plain_json_lines(data) if path.suffix.lower() in _JSON_LINES else None
    if decks is None:
        decks = _decks(path, data)
    return decks, hashlib.sha256(data).hexdigest()
