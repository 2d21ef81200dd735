"""Deal files (`--deals FILE`): what a user's own decks may look like, and the one-line error when they are bad.

Game i is row i of the file; a bad file is refused before anything is written, naming the file and where in it
the problem is; a run directory trusts its deal file only while the file still holds what the run recorded.
"""

import errno
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

import sim
from sim.cli import app

from conftest import games_of, interrupted_deals_run

cli = CliRunner()


def one_line_error(result, code=2) -> str:
    assert result.exit_code == code, (result.output, result.exception)
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("compiling ")]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def deck_lines(seed, count) -> str:
    return "".join(json.dumps({"deck": list(sim.deal(seed, g))}) + "\n" for g in range(count))


def test_an_unreadable_deal_file_is_a_one_line_error_and_resume_says_why(tmp_path, monkeypatch):
    # A deal file this user may not read (or one that fails with an I/O error) ended the command in a traceback
    # with exit code 1, and a resume would have called the file changed.
    import os

    path, out, want = interrupted_deals_run(tmp_path, 12, 4)
    read_bytes = Path.read_bytes

    def denied(self):
        if self.name == path.name:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(path), "-w", "1", "--out", str(tmp_path / "new")]))
    assert "decks.jsonl' cannot be read: Permission denied" in line, line
    assert not (tmp_path / "new").exists()
    line = one_line_error(cli.invoke(app, ["run", "--resume", str(out), "-w", "1"]))
    assert f"deal file {path.resolve()} cannot be read (Permission denied); it is needed to resume" in line, line
    assert len(list((out / "games").iterdir())) == 2
    monkeypatch.undo()
    sim.resume(out, workers=1)
    assert games_of(out).equals(want)
    fifo = tmp_path / "fifo.jsonl"  # reading it would wait for a writer forever
    os.mkfifo(fifo)
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(fifo), "-w", "1", "--out", str(tmp_path / "f")]))
    assert "fifo.jsonl' is not a regular file" in line, line


def test_json_lines_are_utf8_with_or_without_a_byte_order_mark(tmp_path):
    # A file saved by a Windows tool starts with a byte order mark: it was refused as "Unexpected UTF-8 BOM
    # (decode using utf-8-sig)"; a byte that is not UTF-8 gave Python's decoding error, naming neither file nor line.
    text = deck_lines(4, 3)
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert cli.invoke(app, ["run", "--deals", str(path), "-w", "1", "-q", "--out", str(tmp_path / "r")]).exit_code == 0
    assert games_of(tmp_path / "r").drop("game").equals(sim.play_decks([sim.deal(4, g) for g in range(3)]).to_polars()
                                                       .drop("game"))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(text.encode() + b'{"deck": [\xe9]}\n')
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(bad), "-w", "1", "--out", str(tmp_path / "b")]))
    assert line == f"Error: {bad}: line 4 is not UTF-8 text (byte 0xe9 at offset {len(text) + 10})", line
    wide = tmp_path / "wide.jsonl"
    wide.write_text(text, encoding="utf-16")
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(wide), "-w", "1", "--out", str(tmp_path / "w")]))
    assert "wide.jsonl: is UTF-16 text" in line, line


def test_a_bad_deck_names_its_row_and_its_line(tmp_path):
    # Blank lines are skipped, so row i (game i) is not line i + 1: an error named only the row, and a bare deck
    # or a file written as one JSON list was said to have "no key 'deck'".
    decks = [list(sim.deal(4, g)) for g in range(3)]
    decks[2][decks[2].index(3)] = 7  # five 7s
    path = tmp_path / "decks.jsonl"
    path.write_text("\n\n" + json.dumps({"deck": decks[0]}) + "\n\n" + json.dumps({"deck": decks[1]}) + "\n  \n"
                    + json.dumps({"deck": decks[2]}) + "\n")
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(path), "-w", "1", "--out", str(tmp_path / "r")]))
    assert line == f"Error: {path}: row 2 (line 7): a deck has four cards of each rank 1..10; this one has 3 x3, 7 x5"
    path.write_text(json.dumps({"deck": decks[0]}) + "\n\n" + json.dumps(decks[1]) + "\n")
    line = one_line_error(cli.invoke(app, ["run", "--deals", str(path), "-w", "1", "--out", str(tmp_path / "r")]))
    assert line == f'Error: {path}: row 1 (line 3) is a JSON list, not {{"deck": [...]}} (one deck per line)', line
    assert not (tmp_path / "r").exists()


def test_good_decks_are_checked_at_once_and_bad_ones_still_named_where_they_are(tmp_path, monkeypatch):
    # A million decks took about 15 s to read, checked one at a time in Python: good files are now checked as
    # one array, and only a file with a bad deck goes deck by deck, to say which and why.
    import numpy as np
    import polars as pl

    from sim.jobs import deal_files

    decks = np.array([sim.deal(9, g) for g in range(50)], np.uint8)
    files = {"l.parquet": pl.DataFrame({"deck": decks.tolist()}),
             "a.parquet": pl.DataFrame({"deck": pl.Series(decks.tolist(), dtype=pl.Array(pl.UInt8, 40))})}
    for name, frame in files.items():
        frame.write_parquet(tmp_path / name)
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"deck": d}) + "\n" for d in decks.tolist()))
    one_by_one = []
    monkeypatch.setattr(deal_files, "validate_deck", lambda deck: one_by_one.append(deck) or np.asarray(deck))
    for name in ("l.parquet", "a.parquet", "d.jsonl"):
        got, _ = deal_files.read_deals(tmp_path / name)
        assert got.dtype == np.uint8 and np.array_equal(got, decks), name
    assert one_by_one == []
    monkeypatch.undo()
    # A bad deck among good ones, a true among the ranks (read as 1 in an array of numbers), a null: named as before.
    bad = decks.tolist()
    bad[31][5], bad[31][6] = bad[31][6], 11
    pl.DataFrame({"deck": bad}).write_parquet(tmp_path / "bad.parquet")
    with_true = decks.tolist()
    with_true[7][0] = True
    lines = [json.dumps({"deck": d}) for d in with_true]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    nulls = decks.tolist()
    nulls[3] = None
    pl.DataFrame({"deck": nulls}).write_parquet(tmp_path / "null.parquet")
    for name, said in (("bad.parquet", "row 31: card 7 (index 6) is 11"), ("null.parquet", "row 3: a deck has 40 cards"),
                       ("bad.jsonl", "row 7 (line 8): card 1 (index 0) is True")):
        try:
            deal_files.read_deals(tmp_path / name)
        except ValueError as e:
            assert said in str(e), (name, str(e))
        else:
            raise AssertionError(f"{name} was read")


_RANKS = tuple(r for r in range(1, 11) for _ in range(4))
_PLAIN_SPACES = ("", " ", "\t", " \t ")
# Not JSON's spaces; str.strip drops all but \ufeff.
_OTHER_SPACES = ("\x0c", "\x0b", "\xa0", "\x85", "\u2028", "\x1c", "\ufeff")
_PERTURBED = ("extra key first", "extra key last", "other key", "bad rank", "39 ranks", "41 ranks", "spelling",
              "big number", "literal", "duplicate key", "escaped key", "nested", "bare list", "space in key",
              "space in rank", "odd space", "odd line end", "two on a line")
_SPELLINGS = ("{}.0", "{}e0", "{}E+0", "0{}", "00{}", "{}0e-1", "-{}", "{}.", "+{}", "0x{}", '"{}"')
"""Other JSON (or not JSON) spellings of a rank r, all refused or read as something else than the int r."""


@st.composite
def deal_file_texts(draw):
    """A JSON lines deal file as (bytes, plain): plain when every line is a deck record or blank with only the
    spaces, tabs and line ends JSON lines allow; otherwise one of its records (or lines) is perturbed."""
    decks = draw(st.lists(st.permutations(_RANKS), max_size=4))
    perturbed = draw(st.sampled_from(_PERTURBED)) if decks and draw(st.integers(0, 3)) else None
    at = draw(st.integers(0, len(decks) - 1)) if decks else 0
    lines = []
    for i, deck in enumerate(decks):
        ranks = [str(r) for r in deck]
        key, head, tail = '"deck"', "", ""
        how = perturbed if i == at else None
        pick = st.integers(0, 39)
        if how == "bad rank":
            ranks[draw(pick)] = draw(st.sampled_from(("0", "11", "99")))
        elif how in ("39 ranks", "41 ranks"):
            ranks = ranks[:39] if how == "39 ranks" else ranks + ["5"]
        elif how == "spelling":  # the same rank written as JSON does not read it as that int
            j = draw(pick)
            ranks[j] = draw(st.sampled_from(_SPELLINGS)).format(ranks[j])
        elif how == "big number":
            ranks[draw(pick)] = draw(st.sampled_from(("100", "256", "1" + "0" * 25)))
        elif how == "literal":
            ranks[draw(pick)] = draw(st.sampled_from(("true", "false", "null")))
        elif how == "nested":
            ranks[0] = f"[{ranks[0]}]"
        elif how == "space in rank":
            ranks[ranks.index("10")] = draw(st.sampled_from(("1 0", "1\t0")))
        elif how == "escaped key":
            key = draw(st.sampled_from(('"\\u0064eck"', '"dec\\u006b"', '"\\u0064\\u0065\\u0063\\u006b"')))
        elif how == "other key":
            key = draw(st.sampled_from(('"Deck"', '"decks"', '"dek"', "deck", "'deck'")))
        elif how == "space in key":
            key = draw(st.sampled_from(('"de ck"', '" deck"', '"deck\t"')))
        elif how in ("extra key first", "extra key last"):
            extra = f'"id"\0:\0{draw(st.integers(0, 9))}'
            head, tail = (extra + "\0,\0", "") if how == "extra key first" else ("", "\0,\0" + extra)
        elif how == "duplicate key":  # json.loads keeps the last value: a bad first one is not read
            first = list(draw(st.permutations(_RANKS)))
            first[0] = draw(st.sampled_from((first[0], 11)))
            head = f'"deck"\0:\0[{",".join(map(str, first))}]\0,\0'
        # \0 marks each place where JSON allows spaces: one kind of space in all of them, a few others
        items = "\0,\0".join(ranks)
        record = f"\0{{\0{head}{key}\0:\0[\0{items}\0]\0{tail}\0}}\0"
        if how == "bare list":
            record = f"\0[\0{items}\0]\0"
        parts = record.split("\0")
        gaps = [draw(st.sampled_from(_PLAIN_SPACES))] * (len(parts) - 1)
        for _ in range(draw(st.integers(0, 2))):
            gaps[draw(st.integers(0, len(gaps) - 1))] = draw(st.sampled_from(_PLAIN_SPACES))
        if how == "odd space":
            gaps[draw(st.integers(0, len(gaps) - 1))] = draw(st.sampled_from(_OTHER_SPACES))
        line = "".join(p + g for p, g in zip(parts, gaps + [""]))
        if how == "two on a line":
            line += draw(st.sampled_from(_PLAIN_SPACES)) + line
        if how:
            at = len(lines)
        lines.append(line)
        if draw(st.booleans()):  # a blank line
            lines.append(draw(st.sampled_from(_PLAIN_SPACES + (_OTHER_SPACES if how == "odd space" else ()))))
    ends = [draw(st.sampled_from(("\n", "\r\n", "\r"))) for _ in lines]
    if perturbed == "odd line end":  # not a line end to io.StringIO, but one to str.splitlines
        ends[at] = draw(st.sampled_from(("\u2028", "\x85", "\x0c", "\x1e")))
    text = "".join(line + e for line, e in zip(lines, ends))
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no line end after the last line
    data = draw(st.sampled_from((b"", b"\xef\xbb\xbf"))) + text.encode()
    return data, perturbed is None and bool(decks)


def _outcome(read, *args):
    """What reading a deal file gives: its decks, or the error it raises."""
    try:
        decks = read(*args)
    except ValueError as e:
        return type(e).__name__, str(e)
    decks = decks[0] if isinstance(decks, tuple) else decks
    return decks.dtype, decks.tolist()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=deal_file_texts(), chunk=st.sampled_from((1, 200, 1 << 23)))
def test_plain_json_lines_are_read_at_once_as_line_by_line(tmp_path, monkeypatch, file, chunk):
    # A file of 10 million decks took over a minute to read with json.loads per line: plain deck records are now
    # matched and parsed all at once, and any other file is read line by line as before. The two must agree:
    # the same decks, or the same error naming the same row and line.
    from sim.jobs import deal_files

    data, plain = file
    monkeypatch.setattr(deal_files, "_CHUNK", chunk)  # lines matched a few at a time, or all in one
    path = tmp_path / "decks.jsonl"
    path.write_bytes(data)
    assert (deal_files._plain_json_lines(data) is not None) == plain, data
    assert _outcome(deal_files.read_deals, path) == _outcome(deal_files._decks, path, data), data


def test_a_plain_json_lines_file_is_read_without_json_loads(tmp_path, monkeypatch):
    # json.loads per line read about 150,000 decks/s; its plain records are parsed at once instead.
    import numpy as np

    from sim.jobs import deal_files

    decks = [list(sim.deal(6, g)) for g in range(30)]
    text = "".join(json.dumps({"deck": d}, separators=(",", ":") if g % 2 else None) + ("\r\n" if g % 3 else "\n\n")
                   for g, d in enumerate(decks))
    path = tmp_path / "decks.ndjson"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())

    def refused(*args, **kwargs):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(json, "loads", refused)
    got, digest = deal_files.read_deals(path)
    assert got.dtype == np.uint8 and got.tolist() == decks
    assert digest == deal_files.file_digest(path)
    path.write_text(text.replace("\n\n", '\n{"deck": [1]}\n', 1))  # one line that is not a deck: read line by line
    with pytest.raises(AssertionError, match="json.loads was called"):
        deal_files.read_deals(path)



def _odd_lines(deck) -> list[str]:
    """Lines that are not a plain deck record, each one token or space away from one (or two lines that are not
    two lines to io.StringIO)."""
    plain = json.dumps({"deck": deck})
    items = plain[plain.index("[") + 1:plain.index("]")]
    one_of = lambda old, new: plain.replace(old, new, 1)  # noqa: E731
    lines = [one_of(" 5,", f" {s.format(5)},") for s in _SPELLINGS]
    lines += [one_of(" 10,", f" {s.format(10)},") for s in _SPELLINGS]
    lines += [one_of(" 5,", f" {n},") for n in ("0", "11", "99", "100", "256", "1" + "0" * 25, "true", "null")]
    lines += [one_of(" 10,", f" {s},") for s in ("1 0", "1\t0", "[10]", '"10"')]
    gaps = [plain.index(c) for c in '"[,]}'] + [plain.index(c) + 1 for c in '{:[,'] + [0, len(plain)]
    lines += [plain[:g] + c + plain[g:] for c in _OTHER_SPACES + ("\x00",) for g in gaps]
    lines += [plain + c + plain for c in ("", " ", "\t", "\u2028", "\x85", "\x0c", "\x0b", "\x1c", "\x1e")]
    lines += [one_of("[", "[["), one_of("]", "]]"), one_of("{", "{{"), one_of("}", "}}")]
    lines += [one_of('"deck"', k) for k in ('"\\u0064eck"', '"Deck"', '"de ck"', '"deck "', "'deck'", '"dek"')]
    lines += [one_of("{", '{"deck": [1], '), one_of("{", '{"id": 1, '), one_of("}", ', "id": 1}'),
              one_of("}", f', "deck": [{items}]}}'), one_of(f"[{items}]", items), f"[{items}]",
              one_of(f"{items}]", items.rsplit(", ", 1)[0] + "]"), one_of("]", ", 5]"), plain[:-1], plain + "}"]
    return lines


def test_each_line_that_is_not_a_plain_record_is_read_line_by_line(tmp_path):
    # Each way a line can differ from a plain deck record by one token or one space, between two plain ones:
    # read as line by line, whether to its decks (a duplicate key keeps the last value) or to its error.
    from sim.jobs import deal_files

    decks = [list(sim.deal(3, g)) for g in range(3)]
    assert all(5 in d[:-1] and 10 in d[:-1] for d in decks)  # a rank 5 and a rank 10 with a comma after
    path = tmp_path / "decks.jsonl"
    plain = json.dumps({"deck": decks[1]}).encode()
    raw = [plain[:g] + b + plain[g:] for b in (b"\x85", b"\xa0", b"\xe9", b"\xff") for g in (0, 9, len(plain))]
    first, last = (json.dumps({"deck": d}).encode() for d in (decks[0], decks[2]))
    for line in [line.encode() for line in _odd_lines(decks[1])] + raw + [plain + b"\x85" + plain]:
        data = first + b"\n" + line + b"\r\n" + last
        path.write_bytes(data)
        assert deal_files._plain_json_lines(data) is None, line
        assert _outcome(deal_files.read_deals, path) == _outcome(deal_files._decks, path, data), line
