"""The `sim` command line: parse, call the library, print."""

import json
import logging
import sys
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


def parse_rules(items: list[str] | None):
    from sim.rules import Rules

    values = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            fail(f"--rule {item!r} is not KEY=VALUE (e.g. --rule max_face_down=3)")
        values[key.strip()] = value.strip()
    try:
        return Rules.from_strings(values)
    except ValueError as e:
        fail(str(e))


def parse_deck(text: str) -> list[int]:
    from sim.game import validate_deck

    try:
        ranks = [int(t) for t in text.replace(",", " ").split()]
        return validate_deck(ranks).tolist()
    except ValueError as e:
        fail(f"--deck: {e}")


RuleOpt = Annotated[Optional[list[str]], typer.Option(
    "--rule", help="Rule option KEY=VALUE, repeatable: adjacency, max_pile, max_face_down, grid.")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed of the deals and the policy's stream.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or log lines; errors only.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log lines (-v: per chunk).")]


@app.command()
def deal(
    seed: SeedOpt = 0,
    game: Annotated[int, typer.Option("--game", min=0, help="Game index within the seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
):
    """Print the deck of one game (ranks in draw order).

    Example: sim deal --seed 0 --game 3
    """
    import sim

    deck = sim.deal(seed, game)
    typer.echo(json.dumps(list(deck)) if as_json else " ".join(map(str, deck)))


@app.command()
def replay(
    seed: SeedOpt = 0,
    game: Annotated[int, typer.Option("--game", min=0, help="Game index within the seed.")] = 0,
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name (see `sim policies`).")] = "greedy",
    deck: Annotated[Optional[str], typer.Option("--deck", help="Play this deck instead: 40 ranks, e.g. \"5 10 5 4 ...\".")] = None,
    rule: RuleOpt = None,
):
    """Play one game and print it turn by turn: card, cell, grid, checks fired, end.

    Example: sim replay --seed 0 --game 3 --policy greedy
    """
    import sim
    from sim.replay import format_replay, replay as replay_game

    rules = parse_rules(rule)
    cards = parse_deck(deck) if deck is not None else sim.deal(seed, game)
    try:
        r = replay_game(cards, policy, rules, seed=seed, game=game)
    except ValueError as e:
        fail(str(e))
    typer.echo(format_replay(r))


@app.command()
def policies():
    """List the built-in policies.

    Example: sim policies
    """
    import policies as registry

    for info in registry.BUILTIN.values():
        typer.echo(f"{info.name:10s} {info.description}")


@app.command()
def run(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name (see `sim policies`).")] = "greedy",
    n: Annotated[Optional[str], typer.Option("-n", help="Number of games: 1000000, 1_000_000, 1e6, 2.5e5.")] = None,
    seed: SeedOpt = 0,
    workers: Annotated[Optional[int], typer.Option("--workers", "-w", help="Worker processes (default: CPUs).")] = None,
    chunk_size: Annotated[Optional[int], typer.Option("--chunk-size", help="Games per part file.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Run directory (default results/<run>).")] = None,
    rule: RuleOpt = None,
    deals: Annotated[Optional[Path], typer.Option("--deals", help="Play the decks of a Parquet/JSON-lines file (column `deck`).")] = None,
    record_deals: Annotated[bool, typer.Option("--record-deals", help="Add each game's deck to the output.")] = False,
    resume: Annotated[Optional[Path], typer.Option("--resume", help="Finish an interrupted run in this directory.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing run directory.")] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = 0,
):
    """Play many seeded games across worker processes and write one Parquet row per game.

    Example: sim run --policy greedy -n 1e6
    """
    from sim import runner
    from sim.logs import setup_logging

    setup_logging(verbose, quiet)
    if workers is not None and workers < 1:
        fail(f"--workers must be at least 1, not {workers}")
    try:
        if resume is not None:
            summary = runner.resume(resume, workers=workers, progress=not quiet)
        else:
            if n is None and deals is None:
                fail("-n is required (e.g. -n 1e6), unless --deals gives the decks")
            count = runner.parse_count(n) if n is not None else None
            summary = runner.run(policy, count, seed=seed, rules=parse_rules(rule), workers=workers,
                                 chunk_size=chunk_size, out=out, deals=deals, record_deals=record_deals,
                                 force=force, progress=not quiet, command=runner.command_line())
    except runner.UsageError as e:
        fail(str(e), 2)
    except runner.Interrupted as e:
        fail(str(e), 130)
    except runner.RunError as e:
        if verbose:
            log.exception("run failed")
        fail(str(e), 1)
    typer.echo(summary.text())


def main() -> None:
    app()


if __name__ == "__main__":
    main()
