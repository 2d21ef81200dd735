"""Deal files (`--deals FILE`): what a user's own decks may look like, and the one-line error when they are bad.

Game i is row i of the file; a bad file is refused before anything is written, naming the file and where in it
the problem is; a run directory trusts its deal file only while the file still holds what the run recorded.
"""

import errno
import json
from pathlib import Path

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
