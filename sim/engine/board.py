"""`Board`: a Python handle on one position, for inspection, replays and tests.

It drives the same compiled kernels as the game loop, one call at a time.
"""

from dataclasses import dataclass

import numpy as np

from sim import kernels as K
from sim.engine.rules import Rules
from sim.fielddocs import documented


@documented
@dataclass(frozen=True)
class Placement:
    """What one placement did."""

    cell: int
    """Canonical cell the card went on."""
    rank: int
    """Rank of the placed card."""
    row_fired: bool
    """The row check fired."""
    col_fired: bool
    """The column check fired."""
    turned: tuple[int, ...]
    """Cells whose top card was turned over, ascending."""


def _cells(mask: int) -> tuple[int, ...]:
    return tuple(c for c in range(K.CELLS) if (mask >> c) & 1)


def _check_cell(cell) -> int:
    if isinstance(cell, bool) or not isinstance(cell, (int, np.integer)) or not 0 <= cell < K.CELLS:
        raise ValueError(f"cell must be an integer 0..48 (row * 7 + col), not {cell!r}")
    return int(cell)


def _check_rank(rank) -> int:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= K.RANKS:
        raise ValueError(f"rank must be an integer 1..10, not {rank!r}")
    return int(rank)


class Board:
    """A position on the canonical 7x7 board under one `Rules`."""

    def __init__(self, rules: Rules | None = None):
        if rules is not None and not isinstance(rules, Rules):
            raise TypeError(f"rules must be a sim.Rules, not {type(rules).__name__}")
        self.rules = rules or Rules()
        self._rules = self.rules.as_array()
        self.state = np.empty(K.STATE_SIZE, np.int64)
        K.reset(self.state)

    # --- building and playing ------------------------------------------------
    def put(self, cell: int, rank: int, face_up: bool = True) -> None:
        """Stack a card on `cell` with no checks at all (to set up a position)."""
        cell, rank = _check_cell(cell), _check_rank(rank)
        s = self.state
        bit = 1 << cell
        s[K.OCCUPIED] |= bit
        s[K.TOP + cell] = rank
        s[K.HEIGHT + cell] += 1
        if face_up:
            s[K.FACE_DOWN] &= ~bit
        else:
            s[K.FACE_DOWN] |= bit
        K.draw(s, rank)
        s[K.TURN] += 1
        K.recount(s, self._rules)

    def place(self, cell: int, rank: int) -> Placement:
        """Play `rank` on `cell` as a turn does: face up, then the row and column checks."""
        cell, rank = _check_cell(cell), _check_rank(rank)
        if cell not in self.legal_cells():
            raise ValueError(f"cell {cell} is not legal here; legal cells: {list(self.legal_cells())}")
        if self.state[K.STOCK + rank] <= 0:
            raise ValueError(f"no card of rank {rank} is left in the stock (the deck has {K.COPIES} of each)")
        before = int(self.state[K.FACE_DOWN])
        K.draw(self.state, rank)
        fired = int(K.place(self.state, self._rules, cell, rank))
        after = int(self.state[K.FACE_DOWN])
        turned = (before ^ after) & ~(1 << cell)
        return Placement(cell, rank, bool(fired & K.FIRED_ROW), bool(fired & K.FIRED_COL), _cells(turned))

    # --- reading --------------------------------------------------------------
    def legal_cells(self) -> tuple[int, ...]:
        """Cells where the next card may go, ascending."""
        return _cells(int(K.legal_cells(self.state, self._rules)))

    def top(self, cell: int) -> int | None:
        """Rank of the pile's top card (face up or down), None for an empty cell."""
        rank = int(self.state[K.TOP + _check_cell(cell)])
        return rank or None

    def is_face_down(self, cell: int) -> bool:
        """Whether the top card of the pile on `cell` is face down."""
        return bool((int(self.state[K.FACE_DOWN]) >> _check_cell(cell)) & 1)

    def height(self, cell: int) -> int:
        """Cards in the pile on `cell` (0 when empty)."""
        return int(self.state[K.HEIGHT + _check_cell(cell)])

    @property
    def piles(self) -> int:
        """Number of piles on the table."""
        return int(self.state[K.PILES])

    @property
    def face_down_count(self) -> int:
        """Top cards face down; more than max_face_down loses the game."""
        return int(self.state[K.FACE_DOWN_COUNT])

    @property
    def occupied(self) -> tuple[int, ...]:
        """Cells holding a pile, ascending."""
        return _cells(int(self.state[K.OCCUPIED]))

    def bounding_box(self) -> tuple[int, int, int, int] | None:
        """(min_row, max_row, min_col, max_col) of the occupied cells, or None when empty."""
        if not self.piles:
            return None
        s = self.state
        return int(s[K.MIN_ROW]), int(s[K.MAX_ROW]), int(s[K.MIN_COL]), int(s[K.MAX_COL])

    def stock_counts(self) -> dict[int, int]:
        """Cards of each rank still in the stock."""
        return {r: int(self.state[K.STOCK + r]) for r in range(1, K.RANKS + 1)}

    def render(self, mark: int | None = None) -> str:
        """The occupied part of the board as text: face-down tops in brackets, `.` empty.

        Row and column labels are canonical; `mark` puts a `*` after one cell.
        """
        box = self.bounding_box()
        if box is None:
            return "(empty table)"
        r0, r1, c0, c1 = box
        # Every rank ends in the same column (a 10 beside a 7 stays in line): right-aligned in 4 characters,
        # then a face-down card's closing bracket and the mark.
        lines = ["    " + "".join(f"c{c}".rjust(4).ljust(6) for c in range(c0, c1 + 1)).rstrip()]
        for r in range(r0, r1 + 1):
            cells = []
            for c in range(c0, c1 + 1):
                cell = r * K.SIDE + c
                rank = self.top(cell)
                down = rank is not None and self.is_face_down(cell)
                text = "." if rank is None else f"[{rank}" if down else str(rank)
                after = ("]" if down else "") + ("*" if mark == cell else "")
                cells.append(text.rjust(4) + after.ljust(2))
            lines.append(f"r{r}  " + "".join(cells).rstrip())
        return "\n".join(lines)
