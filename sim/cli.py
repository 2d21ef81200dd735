"""The `sim` command line: parse, call the library, print."""

import contextlib
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer


def _parser_error(name: str) -> type:
    """An exception class of the parser typer runs on (click, or the copy of it typer ships), found by name."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


class OneLineErrors(typer.core.TyperGroup):
    """`sim`, whose usage errors from the parser (an unknown option, a value of the wrong type) are one line,
    `Error: ...` with exit code 2, like every other error of the command line (the parser would print four)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """The parser's own main, not standalone, so that its usage errors come here to be said in one line."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _parser_error("UsageError") as e:
            hint = f" (see '{e.ctx.command_path} -h')" if e.ctx is not None else ""
            typer.echo(f"Error: {e.format_message()}{hint}", err=True)
            sys.exit(e.exit_code)
        except _parser_error("ClickException") as e:
            e.show()
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=OneLineErrors,
    name="sim",
    help="Monte Carlo simulator for Wil Su's solitaire Foursquare.\n\nExample: sim run --policy greedy -n 1e6",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

log = logging.getLogger("sim.cli")


class HelpCommand(typer.core.TyperCommand):
    """A command whose help names each argument by its metavar alone (typer would add `<list[Path]>`), and
    whose options that take one value are refused when given twice."""

    def parse_args(self, ctx, args):
        """A usage error for an option of one value given twice (`sim run -p greedy -p random`): the parser
        would keep the last without a word, and the user may have meant something else (sim compare)."""
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        seen = set()
        for param in order:
            if param.param_type_name != "option" or param.multiple or param.count or param.is_flag:
                continue
            if param.name in seen:
                names = "/".join(sorted(param.opts, key=len, reverse=True))
                raise _parser_error("UsageError")(f"{names} is given more than once; give it once", ctx=ctx)
            seen.add(param.name)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx) -> list[str]:
        """The usage line's pieces: [OPTIONS], then each argument as its metavar (e.g. RUN...)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument" and param.metavar:
                pieces.append(param.metavar)
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx, formatter) -> None:
        """The Arguments and Options sections, arguments shown by their metavar and help."""
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((param.metavar, record[1]) if param.metavar else record)
            elif param.param_type_name == "option":
                opts.append(record)
        for title, records in (("Arguments", args), ("Options", opts)):
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


@app.callback(invoke_without_command=True)
def main_options(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", is_eager=True, help="Print the version and exit.")] = False,
):
    """Monte Carlo simulator for Wil Su's solitaire Foursquare."""
    if version:
        from sim.version import __version__

        typer.echo(f"foursquare-sim {__version__}")
        raise typer.Exit()
    if ctx.invoked_subcommand is None:  # `sim` alone: the help, and success
        typer.echo(ctx.get_help())
        raise typer.Exit()


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and an exit code: 2 for usage errors, 1 for failures."""
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(code)


FLAGS = {"n": "-n", "workers": "--workers", "chunk_size": "--chunk-size", "node_limit": "--node-limit",
         "time_limit": "--time-limit", "split_after": "--split-after", "sat_conflicts": "--sat-conflicts",
         "out": "--out", "seed": "--seed", "explore": "--explore", "loss": "--loss", "decay": "--decay",
         "bootstrap": "--bootstrap", "ridge": "--ridge", "validation_seed": "--validation-seed", "rounds": "--rounds",
         "validation_n": "--validation-n", "rules": "--rule", "game": "--game"}
"""The option that sets each library setting a UsageError may name."""


def _usage_message(e) -> str:
    """A library UsageError in the command line's terms (its setting as the option that sets it)."""
    message, option = str(e), getattr(e, "option", None)
    if option in FLAGS and message.startswith(option):
        message = FLAGS[option] + message[len(option):]
    return message


@contextlib.contextmanager
def library_errors(verbose: int = 0, interrupted: str = "interrupted"):
    """Map the library's errors to messages and exit codes: bad input 2, failure 1, interrupted 130.

    The library raises UsageError/ValueError for bad input, RunError or
    PolicyError when work cannot finish, Interrupted on Ctrl-C/SIGTERM; this
    is the only place that turns them into exits. A KeyboardInterrupt that no
    run's handler turned into Interrupted (tune's search, a report reading its
    runs) says `interrupted`.
    """
    import signal
    import threading

    from sim.errors import Interrupted, PolicyError, RunError, UsageError

    # SIGTERM stops a command as Ctrl-C does, also where no run's handler is in place (the moments after a run
    # gave its handlers back, on its way out with the first signal's Interrupted); either, once received, leaves
    # every later one ignored (`interrupt`). A SIGINT ignored from the start stays ignored.
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)

    def say(e: BaseException) -> NoReturn:
        if isinstance(e, UsageError):
            fail(_usage_message(e), 2)
        if isinstance(e, ValueError):
            fail(str(e), 2)
        if isinstance(e, Interrupted):
            stopping()
            fail(str(e), 130)
        if isinstance(e, KeyboardInterrupt):  # outside the runs' own handlers (reading runs for a report, say)
            stopping()
            first = e.__context__  # a second signal, landing while the first one's Interrupted was on its way here
            fail(str(first) if isinstance(first, Interrupted) else interrupted, 130)
        if verbose:
            log.exception("failed", exc_info=e)
        fail(str(e), 1)

    try:
        yield
    except (UsageError, ValueError, Interrupted, KeyboardInterrupt, RunError, PolicyError) as e:
        try:
            say(e)
        except KeyboardInterrupt:  # a second signal, landing before the first one was said: say the first
            stopping()
            fail(str(e) if isinstance(e, Interrupted) else interrupted, 130)
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) is interrupt:  # not stopping()'s SIG_IGN
                signal.signal(sig, handler)


def interrupt(signum, frame) -> None:
    """The command line's SIGTERM and Ctrl-C outside a run's own handlers: a KeyboardInterrupt, and every later
    signal ignored from here to the exit (`stopping`), so that none can cut into the message of the first.

    A signal landing while a run's Interrupted is on its way out (a second one, sent as the run gave back its
    handlers) only does the latter: raised there, in the unwinding (a `with` block's exit, say), it would replace
    the Interrupted before anything could say it.
    """
    from sim.errors import Interrupted

    stopping()
    if not isinstance(sys.exc_info()[1], Interrupted):
        raise KeyboardInterrupt


def stopping() -> None:
    """Ignore Ctrl-C and SIGTERM from here to the exit: the command has stopped, or is about to say its result or
    why it stopped. A second Ctrl-C (pressed twice, or held) or SIGTERM (sent again) would only cut into the flush
    of the last log records at exit, with a traceback, or end the process before it says what was kept. For the
    command line only, whose process ends next: the library (`sim.run`, ...) leaves the handlers as it found them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


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
        several = next((f"{k}={v}" for k, v in values.items() if "," in v), None)
        fail(f"{e}; several values are for sim sweep (--rule {several})" if several else str(e))


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
    """The ranks of a --deck: a JSON list (what `sim deal --json` prints) or ranks separated by spaces or commas.

    Exits with a usage error unless it is a full 40-card deck.
    """
    from sim.engine.cards import validate_deck

    try:
        if text.lstrip().startswith("["):
            try:
                ranks = json.loads(text)
            except json.JSONDecodeError as e:
                fail(f"--deck: not a JSON list of ranks ({e.msg} at character {e.pos + 1})")
            if not isinstance(ranks, list) or not all(type(r) is int for r in ranks):
                fail("--deck: a JSON deck is a list of 40 whole numbers (ranks 1..10)")
        else:
            words = text.replace(",", " ").split()
            bad = next((w for w in words if not (w.isascii() and w.isdecimal())), None)
            if bad is not None:
                fail(f"--deck: {bad!r} is not a rank: a deck is 40 ranks 1..10 separated by spaces or commas, "
                     "or the JSON list `sim deal --json` prints")
            ranks = [int(w) for w in words]
        return validate_deck(ranks).tolist()
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        fail(f"--deck: {e}")


PolicyOpt = Annotated[str, typer.Option("--policy", "-p", metavar="SPEC", help="Policy name (see `sim policies`).")]
WorkersOpt = Annotated[Optional[int], typer.Option("--workers", "-w", metavar="N", help="Worker processes (default: CPUs).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing run directory (compare, sweep: instead of reusing it).")]
RecordDealsOpt = Annotated[bool, typer.Option("--record-deals", help="Add each game's deck to the output.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", "-o", metavar="DIR", help="Run directory (default results/<run>).")]
ChunkSizeOpt = Annotated[Optional[str], typer.Option("--chunk-size", metavar="N", help="Games (or deals) per part file: 10000, 1e4.")]
DealsOpt = Annotated[Optional[Path], typer.Option("--deals", metavar="FILE", help="Use the decks of a Parquet/JSON-lines file (column `deck`).")]
ResumeOpt = Annotated[Optional[Path], typer.Option("--resume", metavar="DIR", help="Finish an interrupted run in this directory.")]
GameOpt = Annotated[int, typer.Option("--game", min=0, metavar="N", help="Game index within the seed.")]
PolicyArgOpt = Annotated[Optional[list[str]], typer.Option(
    "--policy-arg", metavar="KEY=VALUE", help="Policy parameter, repeatable (see `sim policies`).")]
ExecutorOpt = Annotated[str, typer.Option(
    "--executor", metavar="local|dask", help="Where chunks run: local (worker processes) or dask (a Dask cluster; needs the dask extra).")]
SchedulerOpt = Annotated[Optional[str], typer.Option(
    "--scheduler", metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: $DASK_SCHEDULER_ADDRESS).")]
RuleOpt = Annotated[Optional[list[str]], typer.Option(
    "--rule", metavar="KEY=VALUE", help="Rule option, repeatable: adjacency, max_pile, max_face_down, grid.")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", min=0, metavar="SEED", help="Seed of the deals and the policy's stream (default 0).", show_default=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only errors and the result: no progress bar, notices or log lines.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                         help="More log lines (-v: each chunk's, and Dask's own; tracebacks of failures).")]
VerboseErrorsOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                               help="More log lines (-v: tracebacks of failures).")]
SummaryFormatOpt = Annotated[str, typer.Option("--format", "-f", metavar="text|json",
                                               help="The summary as text or as JSON (for scripts).")]


def _count(n: str | None, option: str = "-n") -> int | None:
    """-n (or `option`) as a whole number of games (1e6, 1_000_000) a seed has, or None when not given."""
    from sim.errors import parse_count

    if n is None:
        return None
    with library_errors():
        count = parse_count(n, option)
    if count > 2**63:
        fail(f"{option} {n!r} is more than the 2**63 games a seed has")
    return count


def run_config(policy: str, n: str | None, seed: int, rule, deals: Path | None, record_deals: bool, policy_arg):
    """The RunConfig the shared options of `run` describe (the options are checked before the library loads)."""
    count, rules, args = _count(n), parse_rules(rule), parse_policy_args(policy_arg)
    from sim.jobs.play import RunConfig

    return RunConfig(policy=policy, n=count, seed=seed, rules=rules, policy_args=tuple(args.items()),
                     deals=None if deals is None else str(deals), record_deals=record_deals)


def given(**options) -> list[str]:
    """The names of the options given: not None, False or empty (0 is given: --seed 0, which reads as false)."""
    return [name for name, value in options.items()
            if value is not None and value is not False and not (isinstance(value, (list, tuple)) and not value)]


def refuse_with_resume(resume, **options) -> None:
    """--resume finishes a run with its recorded settings: options that would change them are refused."""
    named = given(**options)
    if resume is not None and named:
        fail(f"--resume {resume} takes the run's recorded settings; drop {', '.join(named)}")


def check_workers(workers: int | None) -> int | None:
    """--workers as given (None: every CPU); a usage error below 1."""
    if workers is not None and workers < 1:
        fail(f"--workers must be at least 1, not {workers}")
    return workers


def check_policy(*specs: str | None) -> None:
    """Refuse an empty --policy (it would name no policy, or silently the default)."""
    if any(spec is not None and not spec.strip() for spec in specs):
        fail("--policy '' names no policy (see `sim policies`)")


def logging_options(verbose: int, quiet: bool) -> None:
    """Refuse --quiet with -v, then set up logging as they ask."""
    from sim.jobs.logs import setup_logging

    if quiet and verbose:
        fail("--quiet and -v contradict: give one of them")
    setup_logging(verbose, quiet)


def write_or_print(out: Path, data: dict, settled=None) -> None:
    """Write a tune or train result to --out, making its missing folders as --html does; when that fails after the
    work (a full disk), print what the file would hold on stdout before the error, so that minutes of search are
    not lost with it. `settled()` is called once the result is written or printed (train removes its checkpoint)."""
    from sim.jobs.files import folders_for, write_json_atomic

    try:
        with folders_for(out):
            write_json_atomic(out, data)
    except OSError as e:
        typer.echo(json.dumps(data, indent=2))
        if settled is not None:
            settled()
        fail(f"cannot write {out}: {e.strerror or e}; what it would hold is printed on stdout", 1)
    if settled is not None:
        settled()


OUT_FILE_READ_UP_TO = 10 * 2**20
"""Bytes of an existing --out file read to tell whether it is one the command wrote (theirs are a few kB)."""


def check_out_file(out: Path | None, kind: str, ours) -> None:
    """--out FILE must be writable before any work: it is not a directory, and its folder is one that can be made
    and written (missing folders are made when the file is written, as for --html). It may replace
    only a `kind` file (e.g. "weights file of sim tune"), one whose JSON `ours` accepts, never another file
    (a run's manifest, say), and it may not lie in a run directory, whose files a reader takes for the run's."""
    import os

    if out is None:
        return
    if out.is_dir():
        fail(f"--out {out} is a directory; give a file name")
    if out.exists() and not os.access(out, os.W_OK):
        fail(f"--out {out} is not writable")
    from sim.analysis.datasets import run_holding

    run_dir = run_holding(out)
    if run_dir is not None:
        fail(f"--out {out} lies in the run directory {run_dir}; give a file outside it")
    if out.exists() and not _holds(out, ours):
        fail(f"--out {out} exists and is not a {kind}; give a new file name")
    _check_writable_folder("--out", out.parent)  # a file made there, as for --html: os.access lets root pass /proc


def _holds(path: Path, ours) -> bool:
    """Does the file hold JSON that `ours` accepts? (Not when it is too large, unreadable or not JSON.)"""
    try:
        if path.stat().st_size > OUT_FILE_READ_UP_TO:
            return False
        return ours(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return False


def check_validation_seed(seed: int, validation_seed: int | None) -> None:
    """tune's and train's held-out seed is another seed than the training one (the library's check, in the
    options' names)."""
    if validation_seed is not None and validation_seed == seed:
        fail(f"--validation-seed must differ from --seed, got {seed} for both")


def check_scheduler(executor: str, scheduler: str | None) -> None:
    """--executor is local or dask, and --scheduler goes with dask and is a Dask address; checked before anything
    is created (or reused: compare and sweep may play nothing at all)."""
    from sim.jobs.executors import ExecutorError, check_kind, check_scheduler as check_address

    try:
        check_kind(executor)
        if scheduler is None:
            return
        if executor != "dask":
            fail("--scheduler goes with --executor dask")
        check_address(scheduler)
    except ExecutorError as e:
        fail(str(e))


def execution(workers: int | None, quiet: bool, **options) -> dict:
    """The keyword arguments of how a job runs, shared by run, solve, compare and sweep."""
    check_workers(workers)
    return dict(workers=workers, progress=show_progress(quiet), command=command_line(), notify=_notifier(quiet),
                **options)


def show_progress(quiet: bool) -> bool:
    """Draw a progress bar? Only on a terminal: a redirected stderr (a log file, a pipe) gets no bar at all."""
    return not quiet and sys.stderr.isatty()


def games_bar(total: int, quiet: bool, desc: str):
    """The progress bar of tune's and train's games (those commands play in the main process's loop, not in a run)."""
    from sim.jobs.progress import ProgressBar

    return ProgressBar(total=total, unit=" games", disable=not show_progress(quiet), file=sys.stderr, smoothing=0.1,
                       desc=desc)


def above(bar, say):
    """`say` (None for none), its lines written where the bar was, the bar drawn again after them."""
    return say and (lambda *args: (bar.clear(), say(*args)))


def command_line() -> str:
    """This process's command line, as a run's manifest records it."""
    import shlex

    return shlex.join(["sim", *sys.argv[1:]])


@app.command()
def deal(
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**64 - 1, metavar="SEED", help="Seed of the deals.")] = 0,
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
    seed: SeedOpt = None,
    game: GameOpt = 0,
    policy: Annotated[Optional[list[str]], typer.Option(
        "--policy", "-p", metavar="SPEC", show_default=False,
        help="Policy name (see `sim policies`); default greedy. Repeat to play several on the same deck.")] = None,
    deck: Annotated[Optional[str], typer.Option("--deck", metavar="DECK", help="Play this deck instead: 40 ranks, e.g. \"5 10 5 4 ...\" or the JSON list `sim deal --json` prints. --seed and --game still seed the policy's own choices (random's): give the deal's to replay its game.")] = None,
    rule: RuleOpt = None,
    policy_arg: PolicyArgOpt = None,
    html: Annotated[Optional[Path], typer.Option(
        "--html", metavar="FILE",
        help="Also write a self-contained page that plays the game turn by turn (several --policy: side by side).")] = None,
    run: Annotated[Optional[Path], typer.Option(
        "--run", metavar="RUN",
        help="Replay game --game of this run directory as it was played (its deck, rules, policy and arguments; "
             "a solve run's best winning line); --policy adds others on the same deck (a plugin's run needs "
             "--policy naming it, as --resume does).")] = None,
    quiet: QuietOpt = False,
    verbose: VerboseErrorsOpt = 0,
):
    """Play one game and print it turn by turn: card, cell, grid, checks fired, end.

    Example: sim replay --seed 0 --game 3 --policy greedy --html replay.html

    Example: sim replay --run results/solve-seed0-n100-node_limit1000000 --game 7 --policy greedy
    """
    logging_options(verbose, quiet)
    policies = policy or ([] if run is not None else ["greedy"])
    check_policy(*policies)
    if len(set(policies)) < len(policies):
        fail("a --policy is given twice")
    if run is not None and given(seed=seed, deck=deck, rule=rule, policy_arg=policy_arg):
        fail("--seed, --deck, --rule and --policy-arg do not go with --run: the run records them")
    seed = 0 if seed is None else seed
    check_outputs(None, html)
    rules, args = parse_rules(rule), parse_policy_args(policy_arg)
    from sim.analysis.replay import format_replay, replay as replay_game, replay_run, run_plugin_named
    from sim.engine.cards import deal as deal_cards

    with library_errors(verbose):
        recorded = []
        if run is not None:
            recorded = [replay_run(run, game, named=policies)]
            cards, rules, seed = list(recorded[0].deck), recorded[0].rules, recorded[0].seed
            # The --policy naming the run's plugin (as a resume needs it) is the run's own: not played again.
            own = None if recorded[0].policy == "solve" else run_plugin_named(recorded[0].policy, policies)
            policies = [p for p in policies if p != own]
        else:
            cards = parse_deck(deck) if deck is not None else deal_cards(seed, game)
        if len(policies) > 1:
            from sim.analysis.compare import policy_args_for

            args_of = policy_args_for(policies, args)
        else:
            args_of = {p: args for p in policies}
        from sim.players.api import to_compile

        games = recorded
        for p in policies:
            what = to_compile(p, args_of[p], seeded=False, replay=True)
            if what:
                say(f"compiling {what}…", quiet)
            games.append(replay_game(cards, p, rules, seed=seed, game=game, policy_args=args_of[p]))
    if html is not None:
        from sim.analysis.html import write_page
        from sim.analysis.replay_page import replay_page

        source = (f"game {game} of {run}" if run is not None else
                  "a given deck" if deck is not None else f"seed {seed}, game {game}")
        try:
            say(f"wrote {write_page(html, replay_page(games, source, command_line()))}", quiet)
        except OSError as e:
            fail(f"cannot write {html}: {e.strerror or e}", 1)
    typer.echo("\n\n".join(format_replay(r) for r in games))


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
    policy: Annotated[Optional[str], typer.Option("--policy", "-p", metavar="SPEC", help="Policy name (see `sim policies`); default greedy.", show_default=False)] = None,
    n: Annotated[Optional[str], typer.Option("-n", metavar="N", help="Number of games: 1000000, 1_000_000, 1e6, 2.5e5.")] = None,
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
    fmt: SummaryFormatOpt = "text",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Play many seeded games across worker processes and write one Parquet row per game.

    --policy takes a built-in name, package.module:attr, path/to/file.py:attr
    or an installed plugin's name; --policy-arg KEY=VALUE sets its parameters.

    Example: sim run --policy greedy -n 1e6
    """

    _check_format(fmt, ("text", "json"))
    logging_options(verbose, quiet)
    check_policy(policy)
    check_scheduler(executor, scheduler)
    how = execution(workers, quiet)
    refuse_with_resume(resume, **{"-n": n, "--seed": seed, "--rule": rule, "--deals": deals,
                                  "--record-deals": record_deals, "--chunk-size": chunk_size, "--out": out,
                                  "--force": force, "--policy-arg": policy_arg})
    chunk_size = _count(chunk_size, "--chunk-size")
    with library_errors(verbose):
        if resume is not None:
            from sim.jobs.resume import resume as resume_run

            summary = resume_run(resume, policy=policy, workers=workers, progress=how["progress"],
                                 notify=how["notify"], executor=executor if executor != "local" or scheduler else None,
                                 scheduler=scheduler)
        else:
            if n is None and deals is None:
                fail("-n is required (e.g. -n 1e6), unless --deals gives the decks")
            config = run_config(policy or "greedy", n, seed or 0, rule, deals, record_deals, policy_arg)
            from sim.jobs.play import run as run_games

            summary = run_games(config, out=out, force=force, chunk_size=chunk_size, executor=executor,
                                scheduler=scheduler, **how)
    echo_summary(summary, fmt, quiet)


def echo_summary(summary, fmt: str, quiet: bool = False) -> None:
    """Print a run's or a solve run's summary as `--format` asks: its text, or its fields as JSON.

    Its note (e.g. that the run was complete already) is a notice, not a result: with text it goes to stderr
    as the other notices do, so that stdout holds the summary alone; JSON keeps it as a field. --quiet drops it.
    """
    from dataclasses import replace

    note = getattr(summary, "note", "")
    if note and (quiet or fmt != "json"):
        summary = replace(summary, note="")
        if not quiet:
            typer.echo(note, err=True)
    typer.echo(json.dumps(summary.to_dict(), indent=2) if fmt == "json" else summary.text())


FormatOpt = Annotated[str, typer.Option("--format", "-f", metavar="text|markdown|json", help="Output: text (aligned tables), markdown or json.")]


PngDirOpt = Annotated[Optional[Path], typer.Option(
    "--png", metavar="DIR", help="Write the figures into this directory (created), one NAME.png each.")]
HtmlOpt = Annotated[Optional[Path], typer.Option(
    "--html", metavar="FILE", help="Write one self-contained HTML page (tables and figures; opens with no network).")]


def check_outputs(png: Path | None, html: Path | None) -> None:
    """--png names a directory and --html a file, where they can be written: refuse otherwise, before any work."""
    if png is not None and (png.suffix.lower() == ".png" or (png.exists() and not png.is_dir())):
        fail(f"--png takes a directory, where each figure is written as NAME.png; {str(png)!r} is a file name")
    if html is not None and html.is_dir():
        fail(f"--html takes a file name; {str(html)!r} is a directory")
    check_not_a_run_file(html)
    check_not_in_a_runs_parts(png)
    for option, folder in (("--png", png), ("--html", None if html is None else html.parent)):
        if folder is not None:
            _check_writable_folder(option, folder)


def check_not_a_run_file(html: Path | None) -> None:
    """--html may not replace a file a run keeps (its manifest, lock, parts, or the run --force set aside): the
    page would leave the run unreadable. A page beside them in the run's folder is the user's, as --force leaves
    it. Checked before any work and again before writing, when a run just played may hold the file."""
    if html is None:
        return
    from sim.jobs.runner import ASIDE, GAMES, LOCK, MANIFEST

    run_dir = _run_holding_it_in(html, (MANIFEST, LOCK, GAMES, ASIDE))
    if run_dir is not None:
        fail(f"--html {html} is a file of the run in {run_dir}; give a file name outside its {MANIFEST} and "
             f"{GAMES}/")


def check_not_in_a_runs_parts(png: Path | None) -> None:
    """--png may not put figures among a run's parts (its games/, or the run --force set aside): every read of
    the run would warn of them as stray files. A folder of figures beside games/ in the run's folder is fine."""
    if png is None:
        return
    from sim.jobs.runner import ASIDE, GAMES

    run_dir = _run_holding_it_in(png / "figure.png", (GAMES, ASIDE))  # a figure in png: png itself is looked at
    if run_dir is not None:
        fail(f"--png {png} lies among the parts of the run in {run_dir}; give a folder outside its {GAMES}/")


def _run_holding_it_in(path: Path, names: tuple[str, ...]) -> Path | None:
    """The run directory `path` lies in, when it lies in (or is) one of the run's own `names` there; else None."""
    from sim.analysis.datasets import run_holding

    run_dir = run_holding(path)
    if run_dir is not None and path.resolve().relative_to(run_dir).parts[0] in names:
        return run_dir
    return None


def _check_writable_folder(option: str, folder: Path) -> None:
    """The folder can be made (every part of its path that exists is a directory) and written to: a file is made
    and removed in the deepest part that exists (permission bits alone do not tell, for root or /proc)."""
    import os
    import tempfile

    for f in (folder, *folder.parents):
        if f.exists():
            if not f.is_dir():
                fail(f"{option}: {f} is not a directory")
            try:
                fd, probe = tempfile.mkstemp(dir=f, prefix=".sim-probe-")
            except OSError as e:
                fail(f"{option}: cannot write in {f}: {e.strerror or e}")
            os.close(fd)
            os.unlink(probe)
            return


def write_outputs(png: Path | None, html: Path | None, figures, page, quiet: bool) -> None:
    """Draw the figures (a callable giving name -> figure) into --png DIR and the page (a callable of the
    figures giving its HTML) into --html FILE, saying each file written; a failure to write is exit 1."""
    if png is None and html is None:
        return
    from sim.analysis.html import write_page
    from sim.analysis.plots import save_png

    target = png  # what is being written: named in an error, not the temporary file beside it
    try:
        drawn = figures()
        if png is not None:
            for name, fig in drawn.items():
                target = png / f"{name}.png"
                say(f"wrote {save_png(fig, target)}", quiet)
        target = html
        if html is not None:
            check_not_a_run_file(html)
            say(f"wrote {write_page(html, page(drawn))}", quiet)
    except OSError as e:
        fail(f"cannot write {target}: {e.strerror or e}", 1)


def _check_format(fmt: str, formats=("text", "markdown", "json")) -> None:
    if fmt not in formats:
        fail(f"--format {fmt!r} is not one of {', '.join(formats)}")


def _terminal_width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def _notifier(quiet: bool):
    return None if quiet else (lambda message: typer.echo(message, err=True))


def say(message: str, quiet: bool) -> None:
    """A notice on stderr (`wrote FILE`, ...), unless --quiet: then only errors and the result are printed."""
    if not quiet:
        typer.echo(message, err=True)


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="Run directories (results/<run>).", show_default=False)],
    fmt: FormatOpt = "text",
    png: PngDirOpt = None,
    html: HtmlOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseErrorsOpt = 0,
):
    """Report runs: win rate with its interval, score distribution, end reasons, cards played, face-down cards.

    Several runs are reported one after the other, with an overview table
    first; their figures (--png, --html) show the runs side by side, and runs
    on the same deals are also compared game by game. --png DIR writes
    win_rate.png, score_distribution.png, cards_played.png (and
    paired_difference.png); for solve runs, best_score.png.

    Example: sim report results/greedy-seed0-n1000000 --png figures/
    """
    _check_format(fmt)
    check_outputs(png, html)
    from sim.analysis import html as pages, plots
    from sim.analysis.report import is_solve_run, load_reports, load_solve_report, render, render_solve_reports

    logging_options(verbose, quiet)
    if len({r.resolve() for r in runs}) < len(runs):
        fail("the same run is given twice")
    pages_asked = png is not None or html is not None
    if any(is_solve_run(r) for r in runs):
        if not all(is_solve_run(r) for r in runs):
            fail("solve runs are reported on their own, not with runs of games")
        with library_errors(verbose):
            summaries = [load_solve_report(r) for r in runs]
            comparison, unpaired = _report_pairs(runs, sum(r.deals for r in summaries), pages_asked)
            text = render_solve_reports(summaries, fmt, _terminal_width(), comparison, unpaired)
        write_outputs(png, html, lambda: plots.solve_figures(summaries),
                      lambda figures: pages.solve_page(summaries, figures, command_line(), comparison, unpaired),
                      quiet)
        typer.echo(text, nl=False)
        return
    with library_errors(verbose):
        reports = load_reports(runs)
        comparison, unpaired = _report_pairs(runs, sum(r.games for r in reports), pages_asked)
        text = render(reports, fmt, width=_terminal_width(), comparison=comparison, unpaired=unpaired)
    write_outputs(png, html, lambda: plots.report_figures(reports, comparison),
                  lambda figures: pages.report_page(reports, figures, command_line(), comparison, unpaired), quiet)
    typer.echo(text, nl=False)


def _report_pairs(runs, games: int, pages_asked: bool):
    """(comparison, why there is none) of the runs `sim report` is given: runs on the same deals are compared game
    by game, in the text as on the page. That is a join of their games, which every format leaves to `sim compare`
    for large runs (the report itself reads only group counts), saying so, or why the runs cannot be paired
    (their manifests tell)."""
    if len(runs) < 2:
        return None, ""
    from sim.analysis.compare import compare_if_pairable, pairing_problem

    if pages_asked or games <= PAIRS_IN_TEXT_UP_TO:
        return compare_if_pairable(runs)
    return None, pairing_problem(runs) or (
        f"the runs' pairs are left out above {PAIRS_IN_TEXT_UP_TO:,} games in all (a join of every "
        f"game): sim compare {_shell_words(runs)} prints them")


def _shell_words(paths) -> str:
    import shlex

    return shlex.join(map(str, paths))


PAIRS_IN_TEXT_UP_TO = 5_000_000
"""`sim report`'s text pairs runs game by game up to this many games in all (its pages always do)."""


@app.command()
def compare(
    runs: Annotated[Optional[list[Path]], typer.Argument(metavar="[RUN...]", help="Existing run directories to compare (same seed and deals; sizes may differ).", show_default=False)] = None,
    policy: Annotated[Optional[list[str]], typer.Option("--policy", "-p", metavar="SPEC", help="Play this policy (repeat: at least two).")] = None,
    n: Annotated[Optional[str], typer.Option("-n", metavar="N", help="Games per policy: 1e6, 2.5e5, 1_000_000.")] = None,
    seed: SeedOpt = None,
    rule: RuleOpt = None,
    workers: WorkersOpt = None,
    force: ForceOpt = False,
    record_deals: RecordDealsOpt = False,
    fmt: FormatOpt = "text",
    png: PngDirOpt = None,
    html: HtmlOpt = None,
    policy_arg: PolicyArgOpt = None,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Compare policies (or runs) game by game on the same deals: win rates, paired differences, McNemar's test.

    With --policy, every policy plays the same n seeded deals; each run is
    written under results/ as `sim run` would, and a complete run already
    there with the same settings is reused, an interrupted one finished
    (--force plays it again). With
    run directories, the runs are joined on game; they must share seed and
    deal source (rules, policy and n may differ: a pair is compared on the
    deals both played). --png DIR writes win_rate.png, paired_difference.png,
    frontier.png and score_distribution.png.

    Example: sim compare --policy greedy --policy random -n 1e6
    """
    _check_format(fmt)
    check_outputs(png, html)
    from sim.analysis import compare as cmp

    logging_options(verbose, quiet)
    check_policy(*(policy or []))
    if runs and policy:
        fail("give either run directories or --policy, not both")
    if not runs and not policy:
        fail("give two or more run directories, or two or more --policy with -n")
    check_scheduler(executor, scheduler)
    how = execution(workers, quiet, force=force, record_deals=record_deals, executor=executor, scheduler=scheduler)
    with library_errors(verbose):
        if policy:
            if n is None:
                fail("-n is required with --policy (e.g. -n 1e6)")
            seed = 0 if seed is None else seed
            result = cmp.compare_policies(policy, _count(n), seed=seed, rules=parse_rules(rule),
                                          policy_args=parse_policy_args(policy_arg), **how)
        else:
            # The runs record their seed and policy arguments: a --seed (0 too) or --policy-arg would be ignored.
            if given(n=n, seed=seed, rule=rule, policy_arg=policy_arg, record_deals=record_deals, force=force,
                     workers=workers, scheduler=scheduler) or executor != "local":
                fail("-n, --seed, --rule, --policy-arg, --workers, --force, --record-deals, --executor and "
                     "--scheduler go with --policy, not with run directories")
            result = cmp.compare_runs(runs)
        reports = cmp.arm_reports(result) if png is not None or html is not None else []
    from sim.analysis import html as pages, plots

    write_outputs(png, html, lambda: plots.compare_figures(result, reports),
                  lambda figures: pages.compare_page(result, figures, command_line()), quiet)
    typer.echo(result.render(fmt), nl=False)


@app.command()
def sweep(
    rule: Annotated[list[str], typer.Option("--rule", metavar="KEY=V1,V2,...", help="Option and the values to try, repeatable: max_face_down=3,4,5.", show_default=False)],
    n: Annotated[str, typer.Option("-n", metavar="N", help="Games per combination: 1e6, 2.5e5, 1_000_000.", show_default=False)],
    policy: PolicyOpt = "greedy",
    seed: SeedOpt = 0,
    workers: WorkersOpt = None,
    force: ForceOpt = False,
    record_deals: RecordDealsOpt = False,
    fmt: FormatOpt = "text",
    png: PngDirOpt = None,
    html: HtmlOpt = None,
    policy_arg: PolicyArgOpt = None,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Play every combination of rule option values on the same deals; win rate and mean score of each.

    Each combination is one run under results/ (a complete run already there
    with the same settings is reused, an interrupted one finished; --force
    plays it again). --png DIR
    writes win_rate.png: win rate and mean score, with 95% intervals.

    Example: sim sweep -n 1e5 --rule max_face_down=3,4,5 --rule max_pile=3,4
    """
    _check_format(fmt)
    check_outputs(png, html)
    from sim.analysis import sweep as sw

    logging_options(verbose, quiet)
    check_policy(policy)
    check_scheduler(executor, scheduler)
    how = execution(workers, quiet, force=force, record_deals=record_deals, executor=executor, scheduler=scheduler)
    with library_errors(verbose):
        axes = sw.parse_sweep_options(rule)
        result = sw.sweep(policy, _count(n), axes, seed=seed, policy_args=parse_policy_args(policy_arg), **how)
    from sim.analysis import html as pages, plots

    write_outputs(png, html, lambda: plots.sweep_figures(result),
                  lambda figures: pages.sweep_page(result, figures, command_line()), quiet)
    typer.echo(result.render(fmt), nl=False)


@app.command()
def tune(
    policy: Annotated[str, typer.Option("--policy", "-p", metavar="NAME", help="Policy whose weights to tune (heuristic).")] = "heuristic",
    n: Annotated[str, typer.Option("-n", metavar="N", help="Training games per evaluated weight vector.")] = "40000",
    seed: Annotated[int, typer.Option("--seed", min=0, metavar="SEED", help="Training seed (deals and the search's own sampling).")] = 11,
    rounds: Annotated[int, typer.Option("--rounds", min=1, metavar="N", help="Rounds of the cross-entropy method.")] = 15,
    population: Annotated[int, typer.Option("--population", min=3, metavar="N", help="Weight vectors tried per round.")] = 30,
    elite: Annotated[int, typer.Option("--elite", min=2, metavar="N", help="Best vectors that set the next round's mean.")] = 6,
    validation_seed: Annotated[Optional[int], typer.Option("--validation-seed", min=0, metavar="SEED", help="Seed of the held-out games (default: seed + 1, or 0 after the largest seed).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="Write the weights (JSON) here.")] = None,
    rule: RuleOpt = None,
    workers: WorkersOpt = None,
    fmt: SummaryFormatOpt = "text",
    quiet: QuietOpt = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                         help="More log lines (-v: each round's weights; tracebacks of failures).")] = 0,
):
    """Search heuristic's weights by simulation, then report their win rate on a seed not tuned on.

    The result is a pure function of the arguments. Use the weights with
    --policy-arg weights=FILE (heuristic, lookahead, rollout).

    Example: sim tune --policy heuristic -n 40000 --seed 11 --out weights.json
    """
    import os

    from sim.analysis.tables import count as plural, fmt_pct
    from sim.analysis.tune import is_weights_file, tune as run_tune
    from sim.jobs.runner import interrupt_on_sigterm

    logging_options(verbose, quiet)
    _check_format(fmt, ("text", "json"))
    check_policy(policy)
    count, workers = _count(n), check_workers(workers)
    check_out_file(out, "weights file of sim tune", is_weights_file)
    if elite >= population:  # the library's "2 <= elite < population", in the options' names
        fail(f"--elite must be less than --population, got --elite {elite}, --population {population}")
    check_validation_seed(seed, validation_seed)
    train = f"seed {seed}, {plural(count, 'game')}"
    report = None if quiet else (lambda r, best, mean: typer.echo(
        f"round {r}/{rounds}: train win rate {fmt_pct(best)} (best), {fmt_pct(mean)} (population mean)", err=True))
    baseline = None if quiet else (lambda rate: typer.echo(
        f"baseline: train win rate {fmt_pct(rate)} (default weights; {train})", err=True))
    # The baseline, every candidate, then the tuned weights on the training and the validation games.
    bar = games_bar((1 + rounds * population + 2) * count, quiet, "search")
    with library_errors(verbose, interrupted="interrupted; nothing written"), bar, interrupt_on_sigterm():
        result = run_tune(policy, count, seed=seed, rounds=rounds, population=population, elite=elite,
                          validation_seed=validation_seed, rules=parse_rules(rule),
                          workers=workers or os.cpu_count() or 1,
                          on_round=above(bar, report), on_baseline=above(bar, baseline), on_games=bar.update,
                          on_other_games=bar.update)
    data = result.as_json()
    if out is not None:
        write_or_print(out, data)
    below = bool(result.train_win_rate < result.baseline_win_rate)
    if fmt == "json":
        typer.echo(json.dumps({**data, "below_baseline": below, "out": None if out is None else str(out)}, indent=2))
    else:
        _tune_text(result, train, below)
    if below:
        say(f"warning: the tuned weights win fewer training games than the default weights "
            f"({fmt_pct(result.train_win_rate)} against {fmt_pct(result.baseline_win_rate)}); more games (-n) or "
            f"rounds may find better ones", quiet)
    if out is not None:
        say(f"wrote {out}", quiet)


def _tune_text(result, train: str, below: bool) -> None:
    """`sim tune`'s result as text: the weights, then the baseline, train (on `train`, the training deals) and
    validation win rates."""
    from sim.analysis.tables import count as plural, fmt_pct

    data = result.as_json()
    lo, hi = result.validation_interval
    typer.echo("weights:" if result.chosen == "mean" else
               f"weights (the best vector played: the mean of the last round's elite won "
               f"{fmt_pct(result.mean_train_win_rate)} of the training games):")
    for name, value in data["weights"].items():
        typer.echo(f"  {name:10s} {value:9.4f}")
    typer.echo(f"baseline win rate   {fmt_pct(result.baseline_win_rate)} (default weights; {train})")
    below = ": below the baseline" if below else ""  # even with -q
    typer.echo(f"train win rate      {fmt_pct(result.train_win_rate)} (tuned weights; {train}){below}")
    typer.echo(f"validation win rate {fmt_pct(result.validation_win_rate)} (tuned weights; 95% CI "
               f"{fmt_pct(lo)} .. {fmt_pct(hi)}; seed {result.settings['validation_seed']}, "
               f"{plural(result.settings['validation_n'], 'game')})")


# --- sim train (sim/analysis/train.py) ---------------------------------------------


@app.command()
def train(
    n: Annotated[str, typer.Option("-n", metavar="N", help="Training deals per round.")] = "20000",
    seed: Annotated[int, typer.Option("--seed", min=0, metavar="SEED", help="Training seed (deals and exploration).")] = 21,
    rounds: Annotated[int, typer.Option("--rounds", min=1, metavar="N", help="Rounds of play and fit (the first plays lookahead).")] = 3,
    explore: Annotated[float, typer.Option("--explore", metavar="P", help="Share of deals with one random placement, recorded from there on.")] = 0.5,
    ridge: Annotated[float, typer.Option("--ridge", metavar="L", help="Ridge added to the least-squares fit (> 0).")] = 1.0,
    loss: Annotated[float, typer.Option("--loss", metavar="V", help="Value of a lost deal in the targets and at planner's leaves (<= 0).")] = 0.0,
    bootstrap: Annotated[float, typer.Option("--bootstrap", metavar="B", help="Share of each target taken from the backed-up values (fitted value iteration) instead of the deal's outcome.")] = 0.0,
    decay: Annotated[float, typer.Option("--decay", metavar="D", help="Weight of an earlier round's positions, per round since (0 < D <= 1).")] = 1.0,
    validation_seed: Annotated[Optional[int], typer.Option("--validation-seed", min=0, metavar="SEED", help="Seed of the held-out deals (default: seed + 1, or 0 after the largest seed).")] = None,
    validation_n: Annotated[str, typer.Option("--validation-n", metavar="N", help="Held-out deals played at the end.")] = "2000",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", metavar="FILE", help="Write the values (JSON) here, e.g. values.json.")] = None,
    rule: RuleOpt = None,
    workers: WorkersOpt = None,
    fmt: SummaryFormatOpt = "text",
    quiet: QuietOpt = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                         help="Tracebacks of failures.")] = 0,
):
    """Learn planner's values of positions by simulation, then play them on a held-out seed.

    Each round plays the training deals (lookahead first, then planner with
    the values so far), records every position with the deal's outcome and
    fits the values by least squares. The file is a pure function of the
    arguments, whatever -w; use it with --policy-arg values=FILE, or ship it
    as policies/data/planner.json (the default values). The games are played
    in -w worker processes, 250 deals at a time, and their positions are
    summed in the deals' order.

    With --out FILE, each finished round is kept in FILE.checkpoint until
    FILE is written: after Ctrl-C (or a kill), the same command goes on
    from the last finished round, to the same file.

    Example: sim train -n 8000 --seed 21 --out values.json
    """
    import os

    from sim.analysis.tables import count as plural, fmt_pct
    from sim.analysis.train import checkpoint_path, is_values_file, train as run_train
    from sim.errors import Interrupted
    from sim.jobs.files import missing_folders, remove_folders
    from sim.jobs.runner import interrupt_on_sigterm

    logging_options(verbose, quiet)
    _check_format(fmt, ("text", "json"))
    count, workers = _count(n), check_workers(workers)
    held_out = _count(validation_n, "--validation-n")
    check_out_file(out, "values file of sim train", is_values_file)
    check_validation_seed(seed, validation_seed)
    recorded = []

    def report(r, s):
        """The round's line: its games' own figures (exploring games among them), and what the fit used: every
        round's positions so far."""
        recorded.append(s["positions"])
        exploring = f", some with one random placement (--explore {explore})" if explore > 0 else ""
        fitted = (f"{s['positions']:,} positions recorded and fitted" if r == 1 else
                  f"{s['positions']:,} positions recorded, {sum(recorded):,} fitted (rounds 1-{r}"
                  + (f", earlier ones weighted by --decay {decay})" if decay < 1 else ")"))
        typer.echo(f"round {r}/{rounds}: {s['policy']} on {plural(s['games'], 'deal')} of seed {seed}{exploring}: "
                   f"win rate {fmt_pct(s['win_rate'])}, mean score per deal {s['mean_score_per_deal']:.2f}; {fitted}",
                   err=True)
    bar = games_bar(rounds * count + 2 * held_out, quiet, "self-play, then held-out")
    kept = None if out is None else checkpoint_path(out)
    made = [] if out is None else missing_folders(out.parent)  # the checkpoint's, should the values not be written

    def resumed(history):
        """The rounds the checkpoint kept: said as they were, and left out of the bar."""
        say(f"going on from {kept}: {plural(len(history), 'round')} of {rounds} done", quiet)
        for s in history:
            if not quiet:
                report(s["round"], s)
        bar.reset(total=(rounds - len(history)) * count + 2 * held_out)

    with library_errors(verbose, interrupted="interrupted; nothing written"), bar, interrupt_on_sigterm():
        try:
            result = run_train(count, seed=seed, rounds=rounds, explore=explore, ridge=ridge, loss=loss,
                               bootstrap=bootstrap, decay=decay,
                               validation_seed=validation_seed, validation_n=held_out, rules=parse_rules(rule),
                               on_round=above(bar, None if quiet else report), on_games=bar.update,
                               notify=above(bar, lambda message: say(message, quiet)), checkpoint=kept,
                               on_resume=above(bar, resumed), workers=workers or os.cpu_count() or 1)
        except Interrupted as e:
            raise Interrupted(f"{e}. Finish with: {command_line()}" if kept.exists() else str(e)) from None
    if out is not None:
        def settled():
            """The values are written, or printed: the rounds kept, and the folders made for them, go."""
            kept.unlink(missing_ok=True)
            remove_folders(made)

        write_or_print(out, result.as_json(), settled)
    if fmt == "json":
        shipped = {"wins": result.shipped_wins, "win_rate": result.shipped_win_rate,
                   "mean_score_per_deal": result.shipped_mean_score}
        typer.echo(json.dumps({**result.as_json(), "shipped": shipped, "below_shipped": bool(result.below_shipped),
                               "out": None if out is None else str(out)}, indent=2))
    else:
        _train_text(result)
    if result.below_shipped:
        say(f"warning: these values score less per held-out deal than the shipped ones "
            f"({result.validation_mean_score:.2f} against {result.shipped_mean_score:.2f}); more deals (-n) or "
            f"rounds may do better", quiet)
    if out is not None:
        say(f"wrote {out}", quiet)


def _train_text(result) -> None:
    """`sim train`'s result as text: the held-out figures of these values beside the shipped ones'."""
    from sim.analysis.tables import count as plural, fmt_pct

    lo, hi = result.validation_interval
    typer.echo(f"held-out seed {result.validation_seed}, {plural(result.validation_n, 'deal')} "
               f"(planner with these values; with the shipped values on the same deals):")
    typer.echo(f"  win rate            {fmt_pct(result.validation_win_rate)} (95% CI {fmt_pct(lo)} .. {fmt_pct(hi)}); "
               f"shipped {fmt_pct(result.shipped_win_rate)}")
    below = ": below the shipped values" if result.below_shipped else ""  # even with -q
    typer.echo(f"  mean score per deal {result.validation_mean_score:.2f} (a loss counts 0); "
               f"shipped {result.shipped_mean_score:.2f}{below}")


# --- sim solve (sim/jobs/solve.py) ---------------------------------------------


@app.command()
def solve(
    n: Annotated[Optional[str], typer.Option("-n", metavar="N", help="Number of deals: 2000, 2e3.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", min=0, metavar="SEED", help="Seed of the deals (default 0): the decks `sim run --seed SEED` plays (none with --deals).", show_default=False)] = None,
    deals: DealsOpt = None,
    workers: WorkersOpt = None,
    first_win: Annotated[bool, typer.Option("--first-win", help="Stop at the first win (winnability only); otherwise search for the best score.")] = False,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", metavar="SECONDS", help="Seconds per deal (makes outcomes depend on the machine).")] = None,
    node_limit: Annotated[Optional[str], typer.Option("--node-limit", metavar="N", help="Search nodes (placements tried) per deal: reproducible.")] = None,
    split_after: Annotated[Optional[str], typer.Option("--split-after", metavar="N", help="Serial search nodes after which an unsettled deal is split into subtrees that idle workers share (default 8e6, or 0 with --time-limit, where splits cost wall time and prove no more; 0 never splits). The rows do not depend on who helps. Below 2e6 no SAT question is asked.")] = None,
    sat_conflicts: Annotated[Optional[str], typer.Option("--sat-conflicts", metavar="N", help="When the serial search leaves a best score open, ask a SAT solver about each card count below the best win found (with none found, from the least up), each question stopped after N conflicts (default 1e6; reproducible; 0: the search alone). Example: --sat-conflicts 0.")] = None,
    rule: RuleOpt = None,
    out: OutOpt = None,
    resume: ResumeOpt = None,
    chunk_size: ChunkSizeOpt = None,
    record_deals: RecordDealsOpt = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing run directory.")] = False,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    fmt: SummaryFormatOpt = "text",
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Solve deals with the whole stock order known: won (best score, proven or not), lost, or unresolved.

    Each deal is the deck `sim run` deals for that seed and game. Writes one
    Parquet row per deal (outcome, score, proven_best, score_bound, nodes,
    seconds, moves) and prints winnability (unresolved deals bracketed) and
    the best scores.

    Example: sim solve -n 2000 --time-limit 10
    """
    from sim.errors import UsageError, parse_count

    _check_format(fmt, ("text", "json"))
    logging_options(verbose, quiet)
    check_scheduler(executor, scheduler)
    how = execution(workers, quiet)
    refuse_with_resume(resume, **{"-n": n, "--seed": seed, "--rule": rule, "--deals": deals,
                                  "--record-deals": record_deals, "--chunk-size": chunk_size, "--out": out,
                                  "--force": force, "--first-win": first_win, "--time-limit": time_limit,
                                  "--node-limit": node_limit, "--split-after": split_after,
                                  "--sat-conflicts": sat_conflicts})
    chunk_size = _count(chunk_size, "--chunk-size")
    seed = seed or 0
    nodes = None
    if node_limit is not None:
        try:
            nodes = parse_count(node_limit)
        except UsageError:
            fail(f"--node-limit {node_limit!r} is not a positive whole number")
    if time_limit is not None and not time_limit > 0:
        fail(f"--time-limit must be a positive number of seconds, not {time_limit}")
    schedule = {}  # --split-after, --sat-conflicts
    if split_after is not None:
        try:
            schedule = {"split_after": parse_count(split_after, zero=True)}
        except UsageError:
            fail(f"--split-after {split_after!r} is not a whole number of nodes (0: never split)")
    if sat_conflicts is not None:
        try:
            schedule["sat_conflicts"] = parse_count(sat_conflicts, zero=True)
        except UsageError:
            fail(f"--sat-conflicts {sat_conflicts!r} is not a whole number of conflicts (0: the search alone)")
        if first_win:
            fail("--sat-conflicts is for best-score solves: --first-win stops at the first win and asks no SAT "
                 "question")
    with library_errors(verbose):
        if resume is not None:
            from sim.jobs.play import PLAY
            from sim.jobs.resume import finish_command, job_of, resume as resume_run

            # A game run is sent to `sim run --resume`; a folder that holds no run, or a damaged one, is said so.
            if job_of(resume) is PLAY:
                fail(f"{resume} is not a solve run; finish a game run with: {finish_command(resume)}")
            summary = resume_run(resume, workers=workers, progress=how["progress"], notify=how["notify"],
                                 executor=executor if executor != "local" or scheduler else None,
                                 scheduler=scheduler)
        else:
            if n is None and deals is None:
                fail("-n is required (e.g. -n 2000), unless --deals gives the decks")
            count, rules = _count(n), parse_rules(rule)
            from sim.jobs.solve import SolveConfig, solve_run

            config = SolveConfig(n=count, seed=seed, rules=rules, first_win=first_win,
                                 node_limit=nodes, time_limit=time_limit, **schedule,
                                 deals=None if deals is None else str(deals), record_deals=record_deals)
            summary = solve_run(config, out=out, force=force, chunk_size=chunk_size, executor=executor,
                                scheduler=scheduler, **how)
    echo_summary(summary, fmt, quiet)


# --- sim ls (sim/analysis/datasets.py) -------------------------------------------


@app.command("ls")
def list_runs(
    root: Annotated[Optional[Path], typer.Argument(metavar="[DIR]", help="Where to look (default results/).",
                                                   show_default=False)] = None,
    fmt: FormatOpt = "text",
    quiet: QuietOpt = False,
    verbose: VerboseErrorsOpt = 0,
):
    """List the runs in results/ (or DIR): kind, policy, n, seed, rules, status, win rate or winnability, start.

    Folders that hold no run are searched (three levels deep) but not listed.

    Example: sim ls results/
    """
    from sim.analysis.datasets import list_runs as find_runs, listing_table

    _check_format(fmt)
    logging_options(verbose, quiet)  # the warnings about files in a run that are not its parts, unless --quiet
    where = Path("results") if root is None else root
    if not where.is_dir():
        fail(f"{where} is not a directory" + (" (no runs yet: `sim run` writes results/<run>)" if root is None else ""))
    with library_errors(verbose):
        runs = find_runs(where)
    if fmt == "json":
        typer.echo(json.dumps({"runs": [r.to_dict() for r in runs]}, indent=2))
    elif not runs:
        typer.echo(f"no runs in {where}")
    else:
        table = listing_table(runs, where)
        typer.echo(table.markdown() if fmt == "markdown" else table.text(width=_terminal_width()))


for _command in app.registered_commands:  # every command's help shows arguments by their metavar
    if _command.cls in (None, typer.core.TyperCommand):
        _command.cls = HelpCommand


def without_collections_at_exit() -> None:
    """Leave the objects that exist now to the operating system at exit: the process ends next. Python's shutdown
    runs the garbage collector several times over every object, numba's compiler included once it has loaded
    compiled code: about 0.4 s of every command that plays games, longer than many of them take. Objects are
    still freed as their modules are cleared; only cycles among them are left (`gc.freeze`). For the command
    line only: in a process that goes on (the library, tests), frozen cycles would never be freed."""
    import gc

    gc.freeze()


def main() -> None:
    """The `sim` console script."""
    try:
        app()
    finally:
        stopping()
        without_collections_at_exit()


if __name__ == "__main__":
    main()
