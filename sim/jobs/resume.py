"""Finish any interrupted run: the job kind comes from its manifest (a game run or a solve run)."""

from pathlib import Path

from sim.jobs import runner
from sim.jobs.play import PLAY
from sim.jobs.runner import UsageError, read_manifest
from sim.jobs.solve import SOLVE

JOBS = {job.kind: job for job in (PLAY, SOLVE)}
"""Every job kind, by its manifest "kind"."""


def job_of(run_dir: str | Path) -> runner.Job:
    """The job a run directory holds, from its manifest; UsageError when there is none or it is unknown."""
    kind = read_manifest(Path(run_dir)).get("kind", "run")
    if kind not in JOBS:
        raise UsageError(f"{run_dir}: unknown job kind {kind!r} in the manifest")
    return JOBS[kind]


def resume(run_dir: str | Path, *, workers: int | None = None, executor: str | None = None,
           scheduler: str | None = None, progress: bool = False):
    """Finish an interrupted run with the settings its manifest recorded; only missing parts are played.

    The executor is the one the run used unless another is given.
    """
    return runner.resume(job_of(run_dir), run_dir, workers=workers, executor=executor, scheduler=scheduler,
                         progress=progress)
