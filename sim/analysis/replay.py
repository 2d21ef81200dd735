"""A game turn by turn, for `sim replay` and for reading what a policy did."""

from dataclasses import dataclass, field

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


def replay(deck, policy: str = "greedy", rules: Rules | None = None, seed: int = 0, game: int = 0,
           policy_args=None) -> Replay:
    """Play the game with the compiled loop, then step a Board through its moves."""
    rules = rules or Rules()
    g = trace(deck, policy, rules, seed, game, policy_args)
    code, played, moves = g.end, g.cards_played, g.moves
    board = Board(rules)
    turns = []
    for t, cell in enumerate(moves):
        card = int(deck[t])
        new_pile = board.top(cell) is None
        p = board.place(cell, card)
        turns.append(Turn(t + 1, card, cell, new_pile, p.row_fired, p.col_fired, p.turned,
                          board.face_down_count, board.render(mark=cell)))
    won = code == K.END_WIN
    return Replay(tuple(int(r) for r in deck), policy, rules, tuple(turns), END_NAMES[code],
                  K.DECK_SIZE - played if won else None, dict(policy_args or {}))


def policy_text(r: Replay) -> str:
    """The policy with its arguments, as typed ("heuristic weights=-5,1,1"): two games of one policy with other
    arguments are other games."""
    args = " ".join(f"{k}={v}" for k, v in r.policy_args.items())
    return f"{r.policy} {args}" if args else r.policy


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
        turned = ", ".join(map(str, t.turned)) if t.turned else "nothing"
        where = "new pile" if t.new_pile else "on a pile"
        lines.append(f"turn {t.number:2d}: drew {t.card:2d} -> cell {cell_name(t.cell)}, {where}; "
                     f"{fired}; turned {turned}; {t.face_down} face down")
        lines.extend("    " + row for row in t.board.splitlines())
        lines.append("")
    if r.end == "win":
        lines.append(f"end: win after {len(r.turns)} cards, score {r.score} (cards left in the stock)")
    else:
        lines.append(f"end: lost ({r.end}) after {len(r.turns)} cards")
    return "\n".join(lines)
