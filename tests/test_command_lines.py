"""Random command lines, one after another in one folder: whatever a user types, `sim` ends with exit 0, 1
or 2, says a failure in one line, and leaves every run already written readable.

The other CLI tests check chosen errors one at a time. Here each line is a valid command, or one with a
single option given a bad value (a count, rule, policy, file or run), the way a user's mistakes come,
and the runs that earlier lines wrote are what later lines report, resume and replay. Only fast work: small
counts, cheap policies, a node limit on every solve.
"""

import json
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sim.cli import app

cli = CliRunner()

STEPS = 6
"""Command lines per example, each in the folder the lines before it left."""

DECK = " ".join(str(i % 10 + 1) for i in range(40))
RUN = object()
"""A run in results/ now, when there is one (else a path that is not a run)."""
FLAG = (None,)
"""The values of an option that takes none."""

COUNTS = ("-n", ("1", "7", "1e1", "2_0"), ("0", "-3", "abc", "1.5", "1e30", ""), True)
SEED = ("--seed", ("0", "1", "5"), ("-1", str(2**64)))
WORKERS = ("-w", ("1", "2"), ("0", "x"))
RULE = ("--rule", ("grid=3", "grid=2", "max_pile=2", "max_face_down=0", "max_face_down=15", "adjacency=king"),
        ("grid=9", "max_pile=0", "adjacency=diagonal", "foo=1", "grid", "=3", "grid=3,4"))
BAD_POLICIES = ("nope", "missing.py:choose", "os:path", "")
EXECUTOR = ("--executor", ("local",), ("xyz", "Dask"))

SLOTS = {
    "run": (COUNTS, SEED, WORKERS, RULE, ("--policy", ("greedy", "random", "heuristic"), BAD_POLICIES),
            ("--chunk-size", ("3", "10"), ("0", "1e9")), ("--deals", ("decks.jsonl",), ("bad.jsonl", "missing.jsonl")),
            ("--record-deals", FLAG, ()), ("--force", FLAG, ()), ("-f", ("text", "json"), ("xml",)), EXECUTOR),
    "run --resume": ((None, (RUN,), ("missing-run", "decks.jsonl"), True), WORKERS),
    "report": ((None, (RUN,), ("missing-run", "decks.jsonl"), True), (None, (RUN,), ()),
               ("-f", ("text", "json", "markdown"), ("xml",))),
    "compare --policy greedy --policy random": (COUNTS, SEED, WORKERS, RULE, ("--policy", ("heuristic",), BAD_POLICIES),
                                                ("--force", FLAG, ()), EXECUTOR),
    "sweep": (COUNTS, SEED, WORKERS, ("--rule", ("grid=2,3", "max_face_down=3,4"), ("max_pile=2,9", "foo=1,2", "grid=",
                                                                                     "grid=3,,4"), True),
              ("-p", ("greedy", "random"), BAD_POLICIES), EXECUTOR),
    "solve": (COUNTS, SEED, WORKERS, RULE, ("--node-limit", ("100", "1e3"), ("0", "x"), True),
              ("--first-win", FLAG, ()), ("--force", FLAG, ()), EXECUTOR),
    "replay": (("--game", ("0", "3"), ("-1", "x", str(2**63))), ("--policy", ("greedy", "heuristic"), BAD_POLICIES),
               ("--deck", (DECK,), ("1 2 3", "5 " * 40, "[1,2]")), ("--run", (RUN,), ("missing-run", "decks.jsonl"))),
    "deal": (("--game", ("0", "5"), ("-2", "x")), ("--json", FLAG, ())),
    "ls": ((None, ("results", RUN), ("missing-run", "decks.jsonl")),),
}
"""Each command's options: (name, or None for an argument; good values; bad values; given always)."""


def runs_here() -> list[str]:
    """The run directories in results/, in a fixed order (a replayed example sees what it saw)."""
    return sorted(str(p) for p in Path("results").glob("*") if p.is_dir()) if Path("results").is_dir() else []


@st.composite
def command_lines(draw):
    """A command line, valid or with one option given a bad value; the runs it names are those in results/ now."""
    command = draw(st.sampled_from(sorted(SLOTS)))
    slots = SLOTS[command]
    wrong = draw(st.integers(-len(slots), len(slots) - 1))  # the slot given a bad value; none when negative
    args = command.split()
    for i, (name, good, bad, *always) in enumerate(slots):
        if i == wrong and bad:
            value = draw(st.sampled_from(bad))
        elif always or draw(st.booleans()):
            value = draw(st.sampled_from(good))
        else:
            continue
        if value is RUN:
            value = draw(st.sampled_from(runs_here() or ["missing-run"]))
        args += [a for a in (name, value) if a is not None]
    return args


def unreadable_runs() -> list[str]:
    """The runs in results/ whose manifest says complete that `sim report` cannot read (none, unless a command
    line broke one)."""
    broken = []
    for d in runs_here():
        m = Path(d) / "manifest.json"
        if m.is_file() and json.loads(m.read_text()).get("status") == "complete":
            r = cli.invoke(app, ["report", d, "-q", "-f", "json"])
            if r.exit_code != 0:
                broken.append(f"{d}: {r.stderr.strip() or repr(r.exception)}")
    return broken


def test_any_command_line_ends_in_a_result_or_one_line_error_and_breaks_no_run(tmp_path, monkeypatch):
    seen = {0: 0, 1: 0, 2: 0}
    folders = iter(range(10**6))

    # No shrinking: the assertion names the command line at fault, and each try replays whole examples.
    @settings(max_examples=10, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def command_lines_in_a_fresh_folder(data):
        folder = tmp_path / str(next(folders))  # each example starts afresh, so that a replay sees what it saw
        folder.mkdir()
        monkeypatch.chdir(folder)
        Path("decks.jsonl").write_text("".join(json.dumps({"deck": [(7 * i + j) % 10 + 1 for i in range(40)]}) + "\n"
                                               for j in range(5)))
        Path("bad.jsonl").write_text('{"deck": [1, 2, 3]}\nnot json\n')
        for _ in range(STEPS):
            args = data.draw(command_lines())
            r = cli.invoke(app, args)
            said = f"sim {' '.join(args)}\n{r.output}"
            assert r.exception is None or isinstance(r.exception, SystemExit), said
            assert r.exit_code in seen, said
            assert "Traceback" not in r.output, said
            if r.exit_code:
                lines = [text for text in r.stderr.splitlines() if text.strip()]
                assert len(lines) == 1 and lines[0].startswith("Error: "), said
                assert unreadable_runs() == [], said  # nothing already written is lost or corrupted by a failure
            seen[r.exit_code] += 1
        assert unreadable_runs() == []

    command_lines_in_a_fresh_folder()
    assert seen[0] >= 10 and seen[1] + seen[2] >= 5, seen  # both kinds of line were tried, and many that work
