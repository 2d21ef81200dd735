"""What games produce: one game's result and trace, a batch's columns, and the policy error."""

from dataclasses import dataclass

import numpy as np

from sim.errors import PolicyError
from sim.fielddocs import documented

__all__ = ["END_NAMES", "GAME_ENDS", "GameColumns", "GameResult", "GameTrace", "PolicyError", "end_enum",
           "finish_columns", "games_table", "illegal_move_error", "new_columns"]

END_NAMES = ("win", "too_many_face_down", "stock_empty", "no_move", "illegal_move")
"""Name of each END_* code of sim.kernels, indexed by code."""
GAME_ENDS = END_NAMES[:4]
"""The four ways a game can end, codes END_WIN to END_NO_MOVE (illegal_move never reaches a table: it is an
error). Not sliced at K.END_NO_MOVE: a report reads these names, and importing the kernels loads numba
(tests/test_layers.py holds the two to each other)."""


def illegal_move_error(policy: str, cell, seed: int, game: int, turn: int) -> PolicyError:
    """The error for a policy that returned `cell` on `turn` (1-based) of a game."""
    return PolicyError(f"policy {policy!r} returned illegal cell {cell!r} (seed {seed}, game {game}, turn {turn})")


@documented
@dataclass(frozen=True)
class GameResult:
    """The outcome of one game, as `sim.play` returns it."""

    won: bool
    """True when the game ended with a full grid and every top card face up."""
    score: int | None
    """Cards left in the stock at a win (0..24 under the default rules, up to 36 with `grid=2`); None for a lost game."""
    cards_played: int
    """Cards placed on the table."""
    face_down: int
    """Top cards face down at the end."""
    piles: int
    """Piles on the table at the end."""
    end: str
    """How it ended: win, too_many_face_down, stock_empty or no_move."""
    moves: tuple[int, ...]
    """Canonical cell of each placement, in order."""


@documented
@dataclass(frozen=True, eq=False)
class GameTrace:
    """One game turn by turn, as `sim.players.api.trace` plays it (replays and tests read it)."""

    end: int
    """The END_* code."""
    cards_played: int
    """Cards placed on the table."""
    moves: tuple[int, ...]
    """Canonical cell of each placement."""
    fired: tuple[int, ...]
    """Checks fired by each placement (K.FIRED_ROW | K.FIRED_COL)."""
    state: np.ndarray
    """The final position (sim.kernels state layout)."""

    def result(self) -> GameResult:
        """The game's GameResult."""
        from sim import kernels as K

        won = self.end == K.END_WIN
        return GameResult(
            won=won,
            score=K.DECK_SIZE - self.cards_played if won else None,
            cards_played=self.cards_played,
            face_down=int(self.state[K.FACE_DOWN_COUNT]),
            piles=int(self.state[K.PILES]),
            end=END_NAMES[self.end],
            moves=self.moves,
        )


@documented
@dataclass(frozen=True)
class GameColumns:
    """Column arrays for a batch of games, one entry per game."""

    game: np.ndarray
    """Game index within the run (uint64)."""
    won: np.ndarray
    """bool."""
    score: np.ndarray
    """int8: cards left at a win, -1 for a lost game."""
    cards_played: np.ndarray
    """uint8."""
    face_down: np.ndarray
    """uint8: face-down top cards at the end."""
    piles: np.ndarray
    """uint8."""
    end: np.ndarray
    """uint8 END_* code; END_NAMES[code] is its name."""
    deck: np.ndarray | None
    """(n, 40) uint8 decks, when recorded."""

    def __len__(self) -> int:
        return len(self.game)

    def to_polars(self):
        """The games as a polars DataFrame with exactly the Parquet schema of a run's part (see `games_table`)."""
        return games_table({name: getattr(self, name) for name in self.__dataclass_fields__})


def end_enum():
    """The `end` column's polars type: an Enum of the four ways a game can end (GAME_ENDS)."""
    import polars as pl

    return pl.Enum(list(GAME_ENDS))


def games_table(cols):
    """One row per game, the schema of a run's Parquet part, from columns as GameColumns holds them.

    `cols` maps game, won, score (int8, -1 for a lost game), cards_played,
    face_down, piles, end (END_* codes) and optionally deck ((n, 40) ranks or
    None) to arrays. The table: game uint64, won bool, score uint8 (null when
    lost), cards_played, face_down, piles uint8, end (`end_enum`), and deck
    (list of uint8) when the decks are given. polars is imported here, so
    that importing the engine does not load it.
    """
    import polars as pl

    ends = end_enum()
    frame = pl.DataFrame({
        "game": pl.Series(cols["game"], dtype=pl.UInt64),
        "won": pl.Series(cols["won"], dtype=pl.Boolean),
        "score": pl.Series(cols["score"], dtype=pl.Int8),
        "cards_played": pl.Series(cols["cards_played"], dtype=pl.UInt8),
        "face_down": pl.Series(cols["face_down"], dtype=pl.UInt8),
        "piles": pl.Series(cols["piles"], dtype=pl.UInt8),
        "end": pl.Series(cols["end"], dtype=pl.UInt8),
    }).with_columns(
        pl.when(pl.col("score") >= 0).then(pl.col("score")).cast(pl.UInt8).alias("score"),
        pl.col("end").replace_strict(dict(enumerate(ends.categories)), return_dtype=ends),
    )
    if cols.get("deck") is not None:
        frame = frame.with_columns(pl.Series("deck", cols["deck"]).cast(pl.List(pl.UInt8)))
    return frame


def new_columns(n: int) -> dict:
    """Output arrays a batch fills, one entry per game."""
    return dict(
        end=np.empty(n, np.uint8),
        cards_played=np.empty(n, np.uint8),
        face_down=np.empty(n, np.uint8),
        piles=np.empty(n, np.uint8),
        score=np.empty(n, np.int8),
        illegal=np.empty(n, np.int64),
    )


def finish_columns(cols: dict, games, decks, policy: str, seed: int) -> GameColumns:
    """GameColumns from a filled batch; PolicyError naming the first illegal move."""
    from sim import kernels as K

    illegal = cols.pop("illegal")
    bad = np.flatnonzero(cols["end"] == K.END_ILLEGAL_MOVE)
    if len(bad):
        i = int(bad[0])
        raise illegal_move_error(policy, int(illegal[i]), seed, int(games[i]), int(cols["cards_played"][i]) + 1)
    return GameColumns(game=games, won=cols["end"] == K.END_WIN, deck=decks, **cols)
