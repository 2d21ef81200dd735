"""A part is read once for its check and its rows: a file replaced between the two is never trusted.

Each reader of a run's parts is given a part that is swapped, just after its
SHA-256 is taken, for one with the same settings and games but other rows
(every game's result flipped): the rows it returns must be the verified ones,
or it must say the part changed.
"""

import hashlib

import polars as pl
import pytest

import sim
from sim.errors import RunError

SWAPPED = "part-00000.parquet changed after it was verified"


def swapped_after_hash(monkeypatch, part):
    """Replace `part` with a copy of itself whose games all have the other result (same metadata, same games) as
    soon as a SHA-256 is next taken: the file then differs from the bytes that were checked."""
    meta = {k: v for k, v in pl.read_parquet_metadata(part).items() if k.startswith("foursquare_sim.")}
    frame = pl.read_parquet(part)
    column = "won" if "won" in frame.columns else "proven_best"
    other = frame.with_columns(~pl.col(column))
    real = hashlib.sha256
    done = []

    class Hash:
        def __init__(self, *data):
            self._h = real(*data)

        def update(self, data):
            self._h.update(data)

        def hexdigest(self):
            digest = self._h.hexdigest()
            if not done:
                done.append(True)
                other.write_parquet(part, metadata=meta)
            return digest

    monkeypatch.setattr(hashlib, "sha256", Hash)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    a = sim.run(sim.RunConfig(policy="greedy", n=300, seed=5), workers=1, chunk_size=100, out=root / "a").path
    b = sim.run(sim.RunConfig(policy="random", n=300, seed=5), workers=1, chunk_size=100, out=root / "b").path
    return root, a, b


@pytest.fixture
def run_a(runs, tmp_path):
    """A fresh copy of the greedy run (the tests change its part)."""
    import shutil

    return shutil.copytree(runs[1], tmp_path / "a")


def test_summary_of_a_run_reads_only_the_verified_part(run_a, monkeypatch):
    from sim.jobs.play import summarize

    swapped_after_hash(monkeypatch, run_a / "games" / "part-00000.parquet")
    with pytest.raises(RunError, match=SWAPPED):
        summarize(run_a, 1.0, 300, "complete")


def test_report_reads_only_the_verified_part(run_a, monkeypatch):
    from sim.analysis.report import load_report

    swapped_after_hash(monkeypatch, run_a / "games" / "part-00000.parquet")
    with pytest.raises(RunError, match=SWAPPED):
        load_report(run_a)


def test_compare_reads_only_the_verified_part(runs, run_a, monkeypatch):
    from sim.analysis.compare import compare_runs

    swapped_after_hash(monkeypatch, run_a / "games" / "part-00000.parquet")
    with pytest.raises(RunError, match=SWAPPED):
        compare_runs([run_a, runs[2]])


def test_ls_reads_only_the_verified_part(run_a, monkeypatch):
    from sim.analysis.datasets import list_runs

    swapped_after_hash(monkeypatch, run_a / "games" / "part-00000.parquet")
    (listed,) = list_runs(run_a.parent)
    assert listed.status == "damaged" and SWAPPED in listed.problem, listed


def test_replay_of_a_runs_game_reads_only_the_verified_part(run_a, monkeypatch):
    from sim.analysis.replay import replay_run

    swapped_after_hash(monkeypatch, run_a / "games" / "part-00000.parquet")
    with pytest.raises(RunError, match=SWAPPED):
        replay_run(run_a, 7)


def test_solve_summary_reads_only_the_verified_part(tmp_path, monkeypatch):
    from sim.jobs.solve_results import summarize_solve

    out = sim.solve_run(sim.SolveConfig(n=4, seed=1, node_limit=1), workers=1, out=tmp_path / "s").path
    swapped_after_hash(monkeypatch, out / "games" / "part-00000.parquet")
    with pytest.raises(RunError, match=SWAPPED):
        summarize_solve(out, 1.0, 4, "complete")
