"""The `sim` command line: parse, call the library, print."""

import contextlib
import json
import logging
import shutil
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

app = typer.Typer(
    name="sim",
    help="Monte Carlo simulator for Wil Su's solitaire Foursquare.\n\nExample: sim run --policy greedy -n 1e6",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

log = logging.getLogger("sim.cli")


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and an exit code: 2 for usage errors, 1 for failures."""
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(code)


FLAGS = {"n": "-n", "workers": "--workers", "chunk_size": "--chunk-size", "node_limit": "--node-limit",
         "time_limit": "--time-limit", "out": "--out"}
"""The option that sets each library setting a UsageError may name."""


def _usage_message(e) -> str:
    """A library UsageError in the command line's terms (its setting as the option that sets it)."""
    message, option = str(e), getattr(e, "option", None)
    if option in FLAGS and message.startswith(option):
        message = FLAGS[option] + message[len(option):]
    return message


@contextlib.contextmanager
def library_errors(verbose: int = 0):
    """Map the library's errors to messages and exit codes: bad input 2, failure 1, interrupted 130.

    The library raises UsageError/ValueError for bad input, RunError or
    PolicyError when work cannot finish, Interrupted on Ctrl-C/SIGTERM; this
    is the only place that turns them into exits.
    """
    from sim.errors import Interrupted, PolicyError, RunError, UsageError

    try:
        yield
    except UsageError as e:
        fail(_usage_message(e), 2)
    except ValueError as e:
        fail(str(e), 2)
    except Interrupted as e:
        fail(str(e), 130)
    except (RunError, PolicyError) as e:
        if verbose:
            log.exception("failed")
        fail(str(e), 1)


def parse_rules(items: list[str] | None):
    """Rules from the --rule KEY=VALUE options; exits with a usage error when one is bad."""
    from sim.engine.rules import Rules

    values = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            fail(f"--rule {item!r} is not KEY=VALUE (e.g. --rule max_face_down=3)")
        if key.strip() in values:
            fail(f"--rule {key.strip()} is given twice")
        values[key.strip()] = value.strip()
    try:
        return Rules.from_strings(values)
    except ValueError as e:
        fail(str(e))


def parse_policy_args(items: list[str] | None) -> dict[str, str]:
    """The --policy-arg KEY=VALUE options as a dict, values still strings (the policy parses them)."""
    args = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--policy-arg {item!r} is not KEY=VALUE (e.g. --policy-arg samples=64)")
        if key.strip() in args:
            fail(f"--policy-arg {key.strip()} is given twice")
        args[key.strip()] = value.strip()
    return args


def parse_deck(text: str) -> list[int]:
    """The ranks of a --deck given as text (spaces or commas); exits unless it is a full 40-card deck."""
    from sim.engine.cards import validate_deck

    try:
        ranks = [int(t) for t in text.replace(",", " ").split()]
        return validate_deck(ranks).tolist()
    except ValueError as e:
        fail(f"--deck: {e}")


PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="Policy name (see `sim policies`).")]
WorkersOpt = Annotated[Optional[int], typer.Option("--workers", "-w", help="Worker processes (default: CPUs).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing run directory (compare, sweep: instead of reusing it).")]
RecordDealsOpt = Annotated[bool, typer.Option("--record-deals", help="Add each game's deck to the output.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", "-o", help="Run directory (default results/<run>).")]
ChunkSizeOpt = Annotated[Optional[int], typer.Option("--chunk-size", help="Games (or deals) per part file.")]
DealsOpt = Annotated[Optional[Path], typer.Option("--deals", help="Use the decks of a Parquet/JSON-lines file (column `deck`).")]
ResumeOpt = Annotated[Optional[Path], typer.Option("--resume", help="Finish an interrupted run in this directory.")]
GameOpt = Annotated[int, typer.Option("--game", min=0, help="Game index within the seed.")]
PolicyArgOpt = Annotated[Optional[list[str]], typer.Option(
    "--policy-arg", help="Policy parameter KEY=VALUE, repeatable (see `sim policies`).")]
ExecutorOpt = Annotated[str, typer.Option(
    "--executor", help="Where chunks run: local (worker processes) or dask (a Dask cluster; needs the dask extra).")]
SchedulerOpt = Annotated[Optional[str], typer.Option(
    "--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: $DASK_SCHEDULER_ADDRESS).")]
RuleOpt = Annotated[Optional[list[str]], typer.Option(
    "--rule", help="Rule option KEY=VALUE, repeatable: adjacency, max_pile, max_face_down, grid.")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", min=0, help="Seed of the deals and the policy's stream (default 0).", show_default=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or log lines; errors only.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log lines (-v: per chunk).")]


def _count(n: str | None) -> int | None:
    """-n as a whole number (1e6, 1_000_000), or None when not given."""
    from sim.errors import parse_count

    with library_errors():
        return None if n is None else parse_count(n, "-n")


def run_config(policy: str, n: str | None, seed: int, rule, deals: Path | None, record_deals: bool, policy_arg):
    """The RunConfig the shared options of `run` describe (the options are checked before the library loads)."""
    count, rules, args = _count(n), parse_rules(rule), parse_policy_args(policy_arg)
    from sim.jobs.play import RunConfig

    return RunConfig(policy=policy, n=count, seed=seed, rules=rules, policy_args=tuple(args.items()),
                     deals=None if deals is None else str(deals), record_deals=record_deals)


def refuse_with_resume(resume, **given) -> None:
    """--resume finishes a run with its recorded settings: options that would change them are refused."""
    named = [name for name, value in given.items() if value not in (None, False, [], ())]
    if resume is not None and named:
        fail(f"--resume {resume} takes the run's recorded settings; drop {', '.join(named)}")


def execution(workers: int | None, quiet: bool, **options) -> dict:
    """The keyword arguments of how a job runs, shared by run, solve, compare and sweep."""
    if workers is not None and workers < 1:
        fail(f"--workers must be at least 1, not {workers}")
    return dict(workers=workers, progress=not quiet, command=command_line(), notify=_notifier(quiet), **options)


def command_line() -> str:
    """This process's command line, as a run's manifest records it."""
    import shlex
    import sys

    return shlex.join(["sim", *sys.argv[1:]])


@app.command()
def deal(
    seed: SeedOpt = 0,
    game: GameOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
):
    """Print the deck of one game (ranks in draw order).

    Example: sim deal --seed 0 --game 3
    """
    from sim.engine.cards import deal as deal_cards

    with library_errors():
        deck = deal_cards(seed, game)
    typer.echo(json.dumps(list(deck)) if as_json else " ".join(map(str, deck)))


@app.command()
def replay(
    seed: SeedOpt = 0,
    game: GameOpt = 0,
    policy: PolicyOpt = "greedy",
    deck: Annotated[Optional[str], typer.Option("--deck", help="Play this deck instead: 40 ranks, e.g. \"5 10 5 4 ...\".")] = None,
    rule: RuleOpt = None,
    policy_arg: PolicyArgOpt = None,
):
    """Play one game and print it turn by turn: card, cell, grid, checks fired, end.

    Example: sim replay --seed 0 --game 3 --policy greedy
    """
    from sim.analysis.replay import format_replay, replay as replay_game
    from sim.engine.cards import deal as deal_cards

    rules = parse_rules(rule)
    with library_errors():
        cards = parse_deck(deck) if deck is not None else deal_cards(seed, game)
        r = replay_game(cards, policy, rules, seed=seed, game=game, policy_args=parse_policy_args(policy_arg))
    typer.echo(format_replay(r))


@app.command()
def policies():
    """List the policies: built-ins and plugins registered by installed packages, with their parameters.

    Any module:attr or path/to/file.py:attr holding a policy also works as --policy.

    Example: sim policies
    """
    from sim.players.api import describe

    for name, description, params in describe():
        typer.echo(f"{name:10s} {description}  [{params}]")


@app.command()
def run(
    policy: Annotated[Optional[str], typer.Option("--policy", "-p", help="Policy name (see `sim policies`); default greedy.", show_default=False)] = None,
    n: Annotated[Optional[str], typer.Option("-n", help="Number of games: 1000000, 1_000_000, 1e6, 2.5e5.")] = None,
    seed: SeedOpt = None,
    workers: WorkersOpt = None,
    chunk_size: ChunkSizeOpt = None,
    out: OutOpt = None,
    rule: RuleOpt = None,
    deals: DealsOpt = None,
    record_deals: RecordDealsOpt = False,
    resume: ResumeOpt = None,
    force: ForceOpt = False,
    policy_arg: PolicyArgOpt = None,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Play many seeded games across worker processes and write one Parquet row per game.

    --policy takes a built-in name, package.module:attr, path/to/file.py:attr
    or an installed plugin's name; --policy-arg KEY=VALUE sets its parameters.

    Example: sim run --policy greedy -n 1e6
    """
    from sim.jobs.logs import setup_logging

    setup_logging(verbose, quiet)
    how = execution(workers, quiet)
    refuse_with_resume(resume, **{"-n": n, "--seed": seed, "--rule": rule, "--deals": deals,
                                  "--record-deals": record_deals, "--chunk-size": chunk_size, "--out": out,
                                  "--force": force})
    with library_errors(verbose):
        if resume is not None:
            from sim.jobs.resume import resume as resume_run

            summary = resume_run(resume, policy=policy, policy_args=parse_policy_args(policy_arg) or None,
                                 workers=workers, progress=not quiet, notify=how["notify"],
                                 executor=executor if executor != "local" or scheduler else None,
                                 scheduler=scheduler)
        else:
            if n is None and deals is None:
                fail("-n is required (e.g. -n 1e6), unless --deals gives the decks")
            config = run_config(policy or "greedy", n, seed or 0, rule, deals, record_deals, policy_arg)
            from sim.jobs.play import run as run_games

            summary = run_games(config, out=out, force=force, chunk_size=chunk_size, executor=executor,
                                scheduler=scheduler, **how)
    typer.echo(summary.text())


FormatOpt = Annotated[str, typer.Option("--format", "-f", help="Output: text (aligned tables), markdown or json.")]


def _write_png(figure, png: Path) -> None:
    from sim.analysis.plots import save_png

    try:
        typer.echo(f"wrote {save_png(figure, png)}", err=True)
    except OSError as e:
        fail(f"cannot write {png}: {e.strerror or e}", 1)


def _check_format(fmt: str) -> None:
    if fmt not in ("text", "markdown", "json"):
        fail(f"--format {fmt!r} is not one of text, markdown, json")


def _terminal_width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def _notifier(quiet: bool):
    return None if quiet else (lambda message: typer.echo(message, err=True))


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (results/<run>).", show_default=False)],
    fmt: FormatOpt = "text",
    png: Annotated[Optional[Path], typer.Option("--png", help="Write score_distribution.png and cards_played.png into this directory.")] = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="Write one self-contained HTML report (tables and figures) to this file.")] = None,
    verbose: VerboseOpt = 0,
):
    """Report runs: win rate with its interval, score distribution, end reasons, cards played, face-down cards.

    Several runs are reported one after the other, with an overview table
    first; their figures (--png, --html) show the runs side by side.

    Example: sim report results/greedy-seed0-n1000000 --png figures/
    """
    from sim.analysis.report import is_solve_run, load_reports, render, render_solve_reports

    _check_format(fmt)

    if any(is_solve_run(r) for r in runs):
        if not all(is_solve_run(r) for r in runs) or png is not None or html is not None:
            fail("solve runs are reported on their own, as text, markdown or json (no --png/--html)")
        with library_errors(verbose):
            typer.echo(render_solve_reports(runs, fmt), nl=False)
        return
    with library_errors(verbose):
        reports = load_reports(runs)
        text = render(reports, fmt, width=_terminal_width())
    if png is not None or html is not None:
        from sim.analysis import plots

        try:
            if png is not None:
                for path in plots.write_report_pngs(reports, png):
                    typer.echo(f"wrote {path}", err=True)
            if html is not None:
                from sim.jobs.files import write_atomic
                from sim.analysis.html import render_html

                figures = {name: plots.png_bytes(fig) for name, fig in plots.report_figures(reports).items()}
                page = render_html(reports, figures)
                html.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(html, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
                typer.echo(f"wrote {html}", err=True)
        except OSError as e:
            fail(f"cannot write {e.filename or ''}: {e.strerror or e}", 1)
    typer.echo(text, nl=False)


@app.command()
def compare(
    runs: Annotated[Optional[list[Path]], typer.Argument(help="Existing run directories to compare (same seed, n and deals).", show_default=False)] = None,
    policy: Annotated[Optional[list[str]], typer.Option("--policy", "-p", help="Play this policy (repeat: at least two).")] = None,
    n: Annotated[Optional[str], typer.Option("-n", help="Games per policy: 1e6, 2.5e5, 1_000_000.")] = None,
    seed: SeedOpt = 0,
    rule: RuleOpt = None,
    workers: WorkersOpt = None,
    force: ForceOpt = False,
    record_deals: RecordDealsOpt = False,
    fmt: FormatOpt = "text",
    png: Annotated[Optional[Path], typer.Option("--png", help="Write a figure of the win rates (with 95% intervals) to this PNG file.")] = None,
    policy_arg: PolicyArgOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Compare policies (or runs) game by game on the same deals: win rates, paired differences, McNemar's test.

    With --policy, every policy plays the same n seeded deals; each run is
    written under results/ as `sim run` would, and a complete run already
    there with the same settings is reused (--force plays it again). With
    run directories, the runs are joined on game; they must share seed, n
    and deal source (rules and policy may differ).

    Example: sim compare --policy greedy --policy random -n 1e6
    """
    from sim.analysis import compare as cmp
    from sim.jobs.logs import setup_logging

    _check_format(fmt)
    setup_logging(verbose, quiet)
    if runs and policy:
        fail("give either run directories or --policy, not both")
    if not runs and not policy:
        fail("give two or more run directories, or two or more --policy with -n")
    how = execution(workers, quiet, force=force, record_deals=record_deals)
    with library_errors(verbose):
        if policy:
            if n is None:
                fail("-n is required with --policy (e.g. -n 1e6)")
            result = cmp.compare_policies(policy, _count(n), seed=seed, rules=parse_rules(rule),
                                          policy_args=parse_policy_args(policy_arg), **how)
        else:
            if n is not None or rule or record_deals or force or workers is not None:
                fail("-n, --rule, --workers, --force and --record-deals go with --policy, not with run directories")
            result = cmp.compare_runs(runs)
    if png is not None:
        from sim.analysis.plots import win_rate_figure

        arms = result.arms
        _write_png(win_rate_figure([a.label for a in arms], [a.win_rate for a in arms],
                                   [a.win_rate_low for a in arms], [a.win_rate_high for a in arms],
                                   [a.mean_score for a in arms], f"Win rate on the same {result.n:,} deals"), png)
    typer.echo(result.render(fmt), nl=False)


@app.command()
def sweep(
    rule: Annotated[list[str], typer.Option("--rule", help="Option and the values to try, repeatable: max_face_down=3,4,5.", show_default=False)],
    policy: PolicyOpt = "greedy",
    n: Annotated[Optional[str], typer.Option("-n", help="Games per combination: 1e6, 2.5e5, 1_000_000.")] = None,
    seed: SeedOpt = 0,
    workers: WorkersOpt = None,
    force: ForceOpt = False,
    record_deals: RecordDealsOpt = False,
    fmt: FormatOpt = "text",
    png: Annotated[Optional[Path], typer.Option("--png", help="Write a figure of win rate (95% intervals) and mean score per combination to this PNG file.")] = None,
    policy_arg: PolicyArgOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Play every combination of rule option values on the same deals; win rate and mean score of each.

    Each combination is one run under results/ (a complete run already there
    with the same settings is reused; --force plays it again).

    Example: sim sweep -n 1e5 --rule max_face_down=3,4,5 --rule max_pile=3,4
    """
    from sim.analysis import sweep as sw
    from sim.jobs.logs import setup_logging

    _check_format(fmt)
    setup_logging(verbose, quiet)
    how = execution(workers, quiet, force=force, record_deals=record_deals)
    if n is None:
        fail("-n is required (e.g. -n 1e5): the games each combination plays")
    with library_errors(verbose):
        axes = sw.parse_sweep_options(rule)
        result = sw.sweep(policy, _count(n), axes, seed=seed, policy_args=parse_policy_args(policy_arg), **how)
    if png is not None:
        _write_png(result.figure(), png)
    typer.echo(result.render(fmt), nl=False)


@app.command()
def tune(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy whose weights to tune (heuristic).")] = "heuristic",
    n: Annotated[str, typer.Option("-n", help="Training games per evaluated weight vector.")] = "40000",
    seed: Annotated[int, typer.Option("--seed", min=0, help="Training seed (deals and the search's own sampling).")] = 11,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Rounds of the cross-entropy method.")] = 15,
    population: Annotated[int, typer.Option("--population", min=3, help="Weight vectors tried per round.")] = 30,
    elite: Annotated[int, typer.Option("--elite", min=2, help="Best vectors that set the next round's mean.")] = 6,
    validation_seed: Annotated[Optional[int], typer.Option("--validation-seed", min=0, help="Seed of the held-out games (default: seed + 1).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the weights (JSON) here.")] = None,
    rule: RuleOpt = None,
    workers: WorkersOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Search heuristic's weights by simulation, then report their win rate on a seed not tuned on.

    The result is a pure function of the arguments. Use the weights with
    --policy-arg weights=FILE (heuristic, lookahead, rollout).

    Example: sim tune --policy heuristic -n 40000 --seed 11 --out weights.json
    """
    import os

    from sim.analysis.tune import tune as run_tune
    from sim.jobs.files import write_json_atomic
    from sim.jobs.logs import setup_logging

    setup_logging(verbose, quiet)
    count = _count(n) if n else 0
    report = None if quiet else (lambda r, best, mean: typer.echo(
        f"round {r}/{rounds}: best {best:.4f}, population mean {mean:.4f}", err=True))
    try:
        with library_errors(verbose):
            result = run_tune(policy, count, seed=seed, rounds=rounds, population=population, elite=elite,
                              validation_seed=validation_seed, rules=parse_rules(rule),
                              workers=workers or os.cpu_count() or 1, on_round=report)
    except KeyboardInterrupt:
        fail("interrupted; nothing written", 130)
    data = result.as_json()
    if out is not None:
        try:
            write_json_atomic(out, data)
        except OSError as e:
            fail(f"cannot write {out}: {e.strerror or e}", 1)
    lo, hi = result.validation_interval
    typer.echo("weights:")
    for name, value in data["weights"].items():
        typer.echo(f"  {name:10s} {value:9.4f}")
    typer.echo(f"train win rate      {result.train_win_rate:.4%} (seed {seed}, {count:,} games)")
    typer.echo(f"validation win rate {result.validation_win_rate:.4%} (95% CI {lo:.4%} .. {hi:.4%}; "
               f"seed {result.settings['validation_seed']}, {result.settings['validation_n']:,} games)")
    if out is not None:
        typer.echo(f"wrote {out}")


# --- sim solve (sim/jobs/solve.py) ---------------------------------------------


@app.command()
def solve(
    n: Annotated[Optional[str], typer.Option("-n", help="Number of deals: 2000, 2e3.")] = None,
    seed: SeedOpt = None,
    deals: DealsOpt = None,
    workers: WorkersOpt = None,
    first_win: Annotated[bool, typer.Option("--first-win", help="Stop at the first win (winnability only); otherwise search for the best score.")] = False,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help="Seconds per deal (makes outcomes depend on the machine).")] = None,
    node_limit: Annotated[Optional[str], typer.Option("--node-limit", help="Search nodes (placements tried) per deal: reproducible.")] = None,
    rule: RuleOpt = None,
    out: OutOpt = None,
    resume: ResumeOpt = None,
    chunk_size: ChunkSizeOpt = None,
    record_deals: RecordDealsOpt = False,
    force: ForceOpt = False,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Solve deals with the whole stock order known: won (best score, proven or not), lost, or unresolved.

    Each deal is the deck `sim run` deals for that seed and game. Writes one
    Parquet row per deal (outcome, score, proven_best, nodes, seconds, moves)
    and prints winnability (unresolved deals bracketed) and the best scores.

    Example: sim solve -n 2000 --time-limit 10
    """
    from sim.jobs.logs import setup_logging
    from sim.errors import UsageError, parse_count

    setup_logging(verbose, quiet)
    how = execution(workers, quiet)
    refuse_with_resume(resume, **{"-n": n, "--seed": seed, "--rule": rule, "--deals": deals,
                                  "--record-deals": record_deals, "--chunk-size": chunk_size, "--out": out,
                                  "--force": force, "--first-win": first_win, "--time-limit": time_limit,
                                  "--node-limit": node_limit})
    seed = seed or 0
    nodes = None
    if node_limit is not None:
        try:
            nodes = parse_count(node_limit)
        except UsageError:
            fail(f"--node-limit {node_limit!r} is not a positive whole number")
    if time_limit is not None and not time_limit > 0:
        fail(f"--time-limit must be a positive number of seconds, not {time_limit}")
    with library_errors(verbose):
        if resume is not None:
            from sim.analysis.report import is_solve_run
            from sim.jobs.resume import resume as resume_run

            if not is_solve_run(resume) and (resume / "manifest.json").exists():
                fail(f"{resume} is not a solve run; finish a game run with: sim run --resume {resume}")
            summary = resume_run(resume, workers=workers, progress=not quiet, notify=how["notify"],
                                 executor=executor if executor != "local" or scheduler else None,
                                 scheduler=scheduler)
        else:
            if n is None and deals is None:
                fail("-n is required (e.g. -n 2000), unless --deals gives the decks")
            count, rules = _count(n), parse_rules(rule)
            from sim.jobs.solve import SolveConfig, solve_run

            config = SolveConfig(n=count, seed=seed, rules=rules, first_win=first_win,
                                 node_limit=nodes, time_limit=time_limit,
                                 deals=None if deals is None else str(deals), record_deals=record_deals)
            summary = solve_run(config, out=out, force=force, chunk_size=chunk_size, executor=executor,
                                scheduler=scheduler, **how)
    typer.echo(summary.text())


def main() -> None:
    """The `sim` console script."""
    app()


if __name__ == "__main__":
    main()
