"""A game turn by turn, for `sim replay` and for reading what a policy did."""

from dataclasses import dataclass, field
from pathlib import Path

from sim import kernels as K
from sim.analysis.tables import rules_text
from sim.engine.board import Board
from sim.engine.results import END_NAMES
from sim.engine.rules import Rules
from sim.players.api import trace


@dataclass(frozen=True)
class Turn:
    """One turn of a replayed game."""

    number: int
    """1-based turn number."""
    card: int
    """Rank drawn."""
    cell: int
    """Canonical cell it went on."""
    new_pile: bool
    """The card opened a new pile."""
    row_fired: bool
    """The row check fired."""
    col_fired: bool
    """The column check fired."""
    turned: tuple[int, ...]
    """Cells whose top card turned over."""
    face_down: int
    """Face-down top cards after the turn."""
    board: str
    """The table after the turn, as text (see Board.render)."""


@dataclass(frozen=True)
class Replay:
    """A whole game with every turn."""

    deck: tuple[int, ...]
    """The stock's ranks in drawing order."""
    policy: str
    """The policy that placed the cards."""
    rules: Rules
    """Rule options."""
    turns: tuple[Turn, ...]
    """Every card placed, in order."""
    end: str
    """How it ended (sim.END_NAMES)."""
    score: int | None
    """Cards left at a win; None when lost."""
    policy_args: dict = field(default_factory=dict)
    """The policy's arguments (--policy-arg), as given; empty for its defaults."""
    seed: int = 0
    """The seed of the policy's random stream (and of the deal, unless the deck was given)."""
    game: int = 0
    """The game within the seed."""


def replay(deck, policy: str = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
           policy_args=None) -> Replay:
    """Play the game with the compiled loop, then step a Board through its moves."""
    rules = rules or Rules()
    g = trace(deck, policy, rules, seed, game, policy_args)
    code, played, moves = g.end, g.cards_played, g.moves
    won = code == K.END_WIN
    return Replay(tuple(int(r) for r in deck), policy, rules, _turns(deck, moves, rules)[0], END_NAMES[code],
                  K.DECK_SIZE - played if won else None, dict(policy_args or {}), int(seed), int(game))


def _turns(deck, moves, rules: Rules) -> tuple[tuple[Turn, ...], Board]:
    """Each move of a game, stepped through on a Board; and the Board at the end."""
    board = Board(rules)
    turns = []
    for t, cell in enumerate(moves):
        card = int(deck[t])
        new_pile = board.top(cell) is None
        p = board.place(cell, card)
        turns.append(Turn(t + 1, card, cell, new_pile, p.row_fired, p.col_fired, p.turned,
                          board.face_down_count, board.render(mark=cell)))
    return tuple(turns), board


def run_plugin_named(run_policy: str, named) -> str | None:
    """The spec among `named` (--policy values) that names `run_policy`, a run's plugin (a file path as given,
    relative or not); None when `run_policy` is no plugin or none of them names it."""
    from sim.jobs.play import is_plugin
    from sim.players.plugins import pinned

    if not is_plugin(run_policy):
        return None
    return next((spec for spec in named if pinned(spec, {})[0] == run_policy), None)


def _held_games(m: dict) -> str:
    """The games of a run's listed parts, as ranges ("0..9, 20..29"), or "none"."""
    from sim.jobs.runner import chunk_of

    chunk_size = int(m["chunk_size"])
    ranges: list[list[int]] = []
    for k, count in sorted((chunk_of(name), int(count)) for name, count in (m.get("parts") or {}).items()
                           if chunk_of(name) is not None and int(count) > 0):
        first, last = k * chunk_size, k * chunk_size + count - 1
        if ranges and ranges[-1][1] + 1 == first:
            ranges[-1][1] = last
        else:
            ranges.append([first, last])
    return ", ".join(f"{a}..{b}" for a, b in ranges) if ranges else "none"


def replay_run(run_dir, game: int, named=()) -> Replay:
    """Game `game` of a run, as it was played: its deck, rules, policy and arguments; a solve run's deal as the
    best winning line it recorded.

    A game of policy is played again and must end as its row says (RunError
    otherwise: the policy is not the one that played the run). UsageError
    for a game the run does not hold, a solve run's deal without a winning
    line, or a file the run depends on that is gone or has changed; and for
    a run of a plugin that `named` (the policies the caller names) does not
    name: as a resume, a replay never imports code the caller did not name.
    """
    import polars as pl

    from sim.engine.cards import deal
    from sim.errors import RunError, UsageError
    from sim.jobs.play import is_plugin
    from sim.jobs.runner import changed_files, checked_parts, part_bytes, read_manifest, recorded_decks

    run_dir = Path(run_dir)
    m = read_manifest(run_dir)
    if isinstance(game, bool) or not isinstance(game, int) or game < 0:
        raise UsageError(f"game must be a whole number >= 0, not {game!r}")
    parts = checked_parts(run_dir, m, game)  # only the part that holds the game is checked and read
    rows = (pl.concat([pl.read_parquet(part_bytes(path, sha256)) for path, sha256 in parts.items()])
            .filter(pl.col("game") == game) if parts else None)  # from the bytes that were checked
    if rows is None or rows.height == 0:
        n = int(m.get("n", 0))
        if game >= n:
            raise UsageError(f"{run_dir} holds no game {game} (games 0..{n - 1})")
        status = "incomplete" if m.get("status") != "complete" else "complete, its manifest says"
        raise UsageError(f"{run_dir} holds no game {game} yet: the run is {status}, and of its games "
                         f"0..{n - 1} the parts it lists hold {_held_games(m)}; finish it with --resume")
    row = rows.row(0, named=True)
    rules = Rules(**m["rules"])
    if row.get("deck") is not None:  # recorded with --record-deals
        deck = [int(r) for r in row["deck"]]
    elif m.get("deals") is not None:
        deck = [int(r) for r in recorded_decks(m["deals"], m.get("deals_sha256"), "replay its games")[game]]
    else:
        deck = [int(r) for r in deal(int(m["seed"]), game)]
    if m.get("kind") == "solve":
        if row["outcome"] != "won":
            raise UsageError(f"deal {game} of {run_dir} has no winning line recorded (outcome {row['outcome']})")
        moves = [int(c) for c in row["moves"]]
        turns, board = _turns(deck, moves, rules)
        if (board.piles, board.face_down_count, len(turns)) != (rules.grid ** 2, 0, K.DECK_SIZE - row["score"]):
            raise RunError(f"deal {game} of {run_dir}: its recorded line does not win with score {row['score']}")
        # The search's goal and limits name the line; the manifest keeps the rest (split_after, sat_conflicts).
        options = {k: v for k, v in (m.get("solve") or {}).items()
                   if k in ("first_win", "node_limit", "time_limit") and v not in (None, False)}
        return Replay(tuple(deck), "solve", rules, turns, "win", int(row["score"]),
                      {k: str(v) for k, v in options.items()}, int(m["seed"]), game)
    if is_plugin(m["policy"]) and run_plugin_named(m["policy"], named) is None:
        raise UsageError(f"{run_dir} is a run of the plugin {m['policy']!r}; replaying its game runs that code, "
                         f"so name it: --run {run_dir} --policy {m['policy']}")
    problems = changed_files(m.get("files"))
    if problems:
        raise UsageError(f"cannot replay {run_dir}: {problems[0]}; the game would not be the run's")
    played = replay(deck, m["policy"], rules, seed=int(m["seed"]), game=game, policy_args=m.get("policy_args") or {})
    if (played.end, played.score, len(played.turns)) != (row["end"], row["score"], row["cards_played"]):
        raise RunError(f"game {game} of {run_dir} plays differently now ({played.end} after {len(played.turns)} "
                       f"cards, not {row['end']} after {row['cards_played']}): {m['policy']} is not the code that "
                       f"played the run")
    return played


def policy_text(r: Replay) -> str:
    """The policy with its arguments, as typed ("heuristic weights=-5,1,1"): two games of one policy with other
    arguments are other games."""
    args = " ".join(f"{k}={v}" for k, v in r.policy_args.items())
    return f"{r.policy} {args}" if args else r.policy


def fallback_note(r: Replay) -> str:
    """For an oracle game that is not a win, that the solver found none and the game is greedy's (what the oracle
    plays then); empty otherwise."""
    if r.policy != "oracle" or r.end == "win":
        return ""
    from sim.players.oracle import ORACLE_NODES

    return f"the solver found no win within nodes={r.policy_args.get('nodes', ORACLE_NODES)}, so this is greedy's game"


def cell_name(cell: int) -> str:
    """A canonical cell with its row and column, e.g. "24 (r3 c3)"."""
    row, col = divmod(cell, K.SIDE)
    return f"{cell} (r{row} c{col})"


LEGEND = "legend: 7 face-up top card, [7] face-down top card, 7* the card just placed, . empty; cell = row * 7 + col"
"""The line under the header of `format_replay` that explains the grid's marks (Board.render)."""


def format_replay(r: Replay) -> str:
    """The replay as `sim replay` prints it: each turn's card, cell, checks and table, then the end."""
    lines = [f"deck: {' '.join(map(str, r.deck))}",
             f"policy: {policy_text(r)}   rules: {rules_text(r.rules.as_dict())}", LEGEND, ""]
    for t in r.turns:
        checks = [name for name, fired in (("row", t.row_fired), ("column", t.col_fired)) if fired]
        if len(checks) == 2:
            fired = "row and column checks fired"
        else:
            fired = f"{checks[0]} check fired" if checks else "no check fired"
        turned = ", ".join(map(cell_name, t.turned)) if t.turned else "nothing"
        where = "new pile" if t.new_pile else "on a pile"
        lines.append(f"turn {t.number:2d}: drew {t.card:2d} -> cell {cell_name(t.cell)}, {where}; "
                     f"{fired}; turned {turned}; {t.face_down} face down")
        lines.extend("    " + row for row in t.board.splitlines())
        lines.append("")
    if r.end == "win":
        lines.append(f"end: win after {len(r.turns)} cards, score {r.score} (cards left in the stock)")
    else:
        lines.append(f"end: lost ({r.end}) after {len(r.turns)} cards")
    if fallback_note(r):
        lines.append(f"note: {fallback_note(r)}")
    return "\n".join(lines)
