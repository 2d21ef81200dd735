"""Finish any interrupted run: the job kind comes from its manifest (a game run or a solve run)."""

import shlex
from pathlib import Path

from sim.jobs import play, runner
from sim.jobs.play import PLAY
from sim.jobs.runner import UsageError, read_manifest
from sim.jobs.solve import SOLVE

JOBS = {job.kind: job for job in (PLAY, SOLVE)}
"""Every job kind, by its manifest "kind"."""


def job_of(run_dir: str | Path) -> runner.Job:
    """The job a run directory holds, from its manifest; UsageError when there is none or it is unknown."""
    where = runner.standing_manifest(Path(run_dir))  # a --force killed outright: the run the resume keeps
    kind = read_manifest(where).get("kind", "run")
    if kind not in JOBS:
        raise UsageError(f"{run_dir}: unknown job kind {kind!r} in the manifest")
    return JOBS[kind]


def finish_command(run_dir: str | Path) -> str:
    """The command that finishes the run in `run_dir`, as an interrupted run prints it (a plugin's run names its
    policy again; the path is quoted for the shell)."""
    try:
        job = job_of(run_dir)
        return runner.resume_command(job, job.from_manifest(read_manifest(run_dir)), Path(run_dir))
    except (UsageError, runner.RunError, KeyError, TypeError, ValueError):  # damaged: the plain form
        return shlex.join(["sim", "run", "--resume", str(run_dir)])


def resume(run_dir: str | Path, *, policy: str | None = None, policy_args=None, workers: int | None = None,
           executor: str | None = None, scheduler: str | None = None, progress: bool = False, notify=None):
    """Finish an interrupted run with the settings its manifest recorded; only missing parts are played.

    It runs locally unless `executor` (and `scheduler`) say otherwise. A run
    of a plugin needs its `policy` named again (see `sim.jobs.play.resume`).
    """
    job = job_of(run_dir)
    if job is PLAY:
        return play.resume(run_dir, policy=policy, policy_args=policy_args, workers=workers, executor=executor,
                           scheduler=scheduler, progress=progress, notify=notify)
    if policy is not None:
        raise UsageError(f"{run_dir} is a solve run; it takes no policy")
    return runner.resume(job, run_dir, workers=workers, executor=executor, scheduler=scheduler, progress=progress,
                         notify=notify)
