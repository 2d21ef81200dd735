"""A slow, deliberately plain reference implementation of Foursquare.

Written from RULES.md alone, independently of the compiled engine in ``sim/``.
It favours clarity over speed: the board is a dict from canonical cell
(``row * 7 + col`` on a 7x7 board, first card on the centre cell 24) to a pile,
and a pile is a list of ``[rank, face_up]`` cards, bottom first.

Public surface used by the tests:

* ``RefRules`` / ``make_rules(dict | None)``: rule options with RULES.md defaults.
* ``RefBoard``: ``put`` (setup, no checks), ``legal_cells``, ``place`` (one
  turn's placement: row check then column check), ``top``, ``is_face_down``,
  ``height``, ``piles``, ``face_down_count``.
* ``greedy_choice(board, rank)``: the cell RULES.md's greedy policy plays.
* ``deal(seed, game)`` and ``Stream``: the deal generator / random policy RNG.
* ``play(deck, policy, rules, seed, game)``: a whole game, returned as a dict.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

SIZE = 7                      # canonical board is SIZE x SIZE
CENTRE = 3 * SIZE + 3         # == 24, where the first card goes
DECK_RANKS = tuple(r for r in range(1, 11) for _ in range(4))  # 1,1,1,1,2,...

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
DEAL_STREAM = 1
POLICY_STREAM = 2

ENDS = ("win", "too_many_face_down", "stock_empty", "no_move")

ORTHOGONAL_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))
KING_STEPS = ORTHOGONAL_STEPS + ((-1, -1), (-1, 1), (1, -1), (1, 1))


def cell_of(row: int, col: int) -> int:
    return row * SIZE + col


def row_col(cell: int) -> tuple[int, int]:
    return divmod(cell, SIZE)


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RefRules:
    adjacency: str = "orthogonal"
    max_pile: int = 4
    max_face_down: int = 4
    grid: int = 4

    def __post_init__(self):
        if self.adjacency not in ("orthogonal", "king"):
            raise ValueError(f"adjacency must be 'orthogonal' or 'king', got {self.adjacency!r}")
        if not 1 <= self.max_pile <= 8:
            raise ValueError(f"max_pile must be in 1..8, got {self.max_pile!r}")
        if not 0 <= self.max_face_down <= 15:
            raise ValueError(f"max_face_down must be in 0..15, got {self.max_face_down!r}")
        if not 2 <= self.grid <= 4:
            raise ValueError(f"grid must be in 2..4, got {self.grid!r}")


def make_rules(rules=None) -> RefRules:
    """Accept None, a dict of options, a RefRules, or any object with the four
    option attributes (e.g. the engine's ``sim.Rules``)."""
    if rules is None:
        return RefRules()
    if isinstance(rules, RefRules):
        return rules
    if isinstance(rules, dict):
        return RefRules(**rules)
    return RefRules(
        adjacency=rules.adjacency,
        max_pile=rules.max_pile,
        max_face_down=rules.max_face_down,
        grid=rules.grid,
    )


# ---------------------------------------------------------------------------
# Board
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RefPlacement:
    row_fired: bool
    col_fired: bool
    turned: tuple  # cells turned over, ascending


class RefBoard:
    def __init__(self, rules=None):
        self.rules = make_rules(rules)
        # cell -> list of [rank, face_up]; only occupied cells are keys.
        self.pile_at: dict[int, list[list]] = {}

    # -- setup and inspection ------------------------------------------------

    def put(self, cell: int, rank: int, face_up: bool = True) -> None:
        """Stack a card on ``cell`` with no checks at all (test setup)."""
        self.pile_at.setdefault(cell, []).append([rank, face_up])

    def top(self, cell: int):
        pile = self.pile_at.get(cell)
        return pile[-1][0] if pile else None

    def is_face_down(self, cell: int) -> bool:
        pile = self.pile_at.get(cell)
        return bool(pile) and not pile[-1][1]

    def height(self, cell: int) -> int:
        return len(self.pile_at.get(cell, ()))

    @property
    def piles(self) -> int:
        return len(self.pile_at)

    @property
    def face_down_count(self) -> int:
        return sum(1 for pile in self.pile_at.values() if not pile[-1][1])

    def faces(self) -> dict:
        """{cell: (top rank, face_up)} for every occupied cell."""
        return {c: (p[-1][0], p[-1][1]) for c, p in self.pile_at.items()}

    # -- legality ------------------------------------------------------------

    def legal_cells(self) -> list[int]:
        """Legal cells for the next card, ascending canonical order."""
        rules = self.rules
        if not self.pile_at:
            return [CENTRE]
        rows = [c // SIZE for c in self.pile_at]
        cols = [c % SIZE for c in self.pile_at]
        min_r, max_r, min_c, max_c = min(rows), max(rows), min(cols), max(cols)
        steps = KING_STEPS if rules.adjacency == "king" else ORTHOGONAL_STEPS

        legal = set()
        for cell, pile in self.pile_at.items():
            # An occupied cell whose pile is not full (whatever its top's face).
            if len(pile) < rules.max_pile:
                legal.add(cell)
            # Empty neighbours that keep the bounding box within grid x grid.
            r, c = row_col(cell)
            for dr, dc in steps:
                nr, nc = r + dr, c + dc
                if not (0 <= nr < SIZE and 0 <= nc < SIZE):
                    continue
                n = cell_of(nr, nc)
                if n in self.pile_at:
                    continue
                height = max(max_r, nr) - min(min_r, nr) + 1
                width = max(max_c, nc) - min(min_c, nc) + 1
                if height <= rules.grid and width <= rules.grid:
                    legal.add(n)
        return sorted(legal)

    # -- a turn's placement ----------------------------------------------------

    def _check(self, cell: int, rank: int, others: list[int]):
        """One line check. Returns (fired, cells to turn)."""
        ups = [self.pile_at[o][-1][0] for o in others if self.pile_at[o][-1][1]]
        fired = not ups or rank > max(ups) or rank < min(ups)
        return fired, (list(others) if fired else [])

    def _line_others(self, cell: int):
        r, c = row_col(cell)
        row_others = [o for o in self.pile_at if o != cell and o // SIZE == r]
        col_others = [o for o in self.pile_at if o != cell and o % SIZE == c]
        return row_others, col_others

    def preview(self, cell: int, rank: int):
        """What placing ``rank`` on ``cell`` would do, without doing it.

        Returns (row_fired, col_fired, turned cells). The row check and the
        column check look at disjoint sets of cells (the placed cell is in
        neither), so the column check's outcome does not depend on the row
        check having been applied.
        """
        row_others, col_others = self._line_others(cell)
        row_fired, row_turn = self._check(cell, rank, row_others)
        col_fired, col_turn = self._check(cell, rank, col_others)
        return row_fired, col_fired, row_turn + col_turn

    def place(self, cell: int, rank: int) -> RefPlacement:
        """Play ``rank`` face up on ``cell`` as a turn's placement."""
        if cell not in self.legal_cells():
            raise ValueError(f"cell {cell} is not a legal cell")
        return self._apply(cell, rank)

    def _apply(self, cell: int, rank: int) -> RefPlacement:
        """``place`` without the legality check (the caller has checked)."""
        # Put the card down face up, then the row check, then the column check.
        self.pile_at.setdefault(cell, []).append([rank, True])
        row_others, col_others = self._line_others(cell)
        row_fired, row_turn = self._check(cell, rank, row_others)
        for o in row_turn:
            self.pile_at[o][-1][1] = not self.pile_at[o][-1][1]
        col_fired, col_turn = self._check(cell, rank, col_others)
        for o in col_turn:
            self.pile_at[o][-1][1] = not self.pile_at[o][-1][1]
        return RefPlacement(row_fired, col_fired, tuple(sorted(row_turn + col_turn)))

    def face_down_after(self, cell: int, rank: int) -> int:
        """Face-down top cards after placing ``rank`` on ``cell`` (no change)."""
        count = self.face_down_count
        if self.is_face_down(cell):
            count -= 1                      # the face-down top gets covered
        _, _, turned = self.preview(cell, rank)
        for o in turned:
            count += 1 if self.pile_at[o][-1][1] else -1
        return count

    def copy(self) -> "RefBoard":
        other = RefBoard(self.rules)
        other.pile_at = {c: [list(card) for card in p] for c, p in self.pile_at.items()}
        return other


# ---------------------------------------------------------------------------
# Greedy policy
# ---------------------------------------------------------------------------

def greedy_key(board: RefBoard, cell: int, rank: int) -> tuple:
    """RULES.md: (face-down top cards after, -(occupied cells after), cell)."""
    occupied_after = board.piles + (0 if cell in board.pile_at else 1)
    return (board.face_down_after(cell, rank), -occupied_after, cell)


def greedy_choice(board: RefBoard, rank: int, legal=None) -> int:
    if legal is None:
        legal = board.legal_cells()
    return min(legal, key=lambda cell: greedy_key(board, cell, rank))


# ---------------------------------------------------------------------------
# Random numbers: deal and random policy
# ---------------------------------------------------------------------------

def mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class Stream:
    def __init__(self, seed: int, game: int, stream_id: int):
        key = mix64((seed + stream_id * GOLDEN) & MASK64)
        self.x = mix64(key ^ game)

    def next(self) -> int:
        self.x = (self.x + GOLDEN) & MASK64
        return mix64(self.x)


def deal(seed: int, game: int) -> tuple:
    deck = list(DECK_RANKS)
    s = Stream(seed, game, DEAL_STREAM)
    for i in range(39, 0, -1):
        j = s.next() % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


# ---------------------------------------------------------------------------
# A whole game
# ---------------------------------------------------------------------------

def check_deck(deck) -> list:
    deck = list(deck)
    if len(deck) != 40:
        raise ValueError(f"deck must have 40 cards, got {len(deck)}")
    for r in deck:
        if not isinstance(r, int) or not 1 <= r <= 10:
            raise ValueError(f"deck ranks must be in 1..10, got {r!r}")
    for r in range(1, 11):
        if deck.count(r) != 4:
            raise ValueError(f"deck must hold four of each rank, rank {r} appears {deck.count(r)} times")
    return deck


def play(deck, policy: str = "greedy", rules=None, seed: int = 0, game: int = 0) -> dict:
    deck = check_deck(deck)
    rules = make_rules(rules)
    if policy not in ("greedy", "random"):
        raise ValueError(f"policy must be 'greedy' or 'random', got {policy!r}")
    board = RefBoard(rules)
    rng = Stream(seed, game, POLICY_STREAM) if policy == "random" else None
    moves: list[int] = []
    end = None

    for t, rank in enumerate(deck):
        legal = board.legal_cells()
        if not legal:
            end = "no_move"
            break
        if policy == "greedy":
            cell = greedy_choice(board, rank, legal)
        else:
            cell = legal[rng.next() % len(legal)]
        board._apply(cell, rank)
        moves.append(cell)

        # End of turn, in RULES.md's order.
        face_down = board.face_down_count
        if face_down > rules.max_face_down:
            end = "too_many_face_down"
            break
        if board.piles == rules.grid * rules.grid and face_down == 0:
            end = "win"
            break
        if t == len(deck) - 1:
            end = "stock_empty"
            break

    won = end == "win"
    return {
        "won": won,
        "score": (len(deck) - len(moves)) if won else None,
        "cards_played": len(moves),
        "face_down": board.face_down_count,
        "piles": board.piles,
        "end": end,
        "moves": moves,
    }


def result_dict(result) -> dict:
    """Turn an engine GameResult (or anything with those attributes) into the
    same dict shape as ``play`` returns, for comparisons."""
    return {
        "won": bool(result.won),
        "score": None if result.score is None else int(result.score),
        "cards_played": int(result.cards_played),
        "face_down": int(result.face_down),
        "piles": int(result.piles),
        "end": str(result.end),
        "moves": [int(m) for m in result.moves],
    }
