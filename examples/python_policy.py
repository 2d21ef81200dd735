"""A plain-Python policy plugin: greedy's rule, written against sim.players.plugins.Position.

Run it with:

    sim run --policy examples/python_policy.py:FewestFaceDown -n 2000
    sim run --policy examples/python_policy.py:FewestFaceDown --policy-arg prefer_new=no -n 2000

A plain-Python policy is a function choose(position, card) -> cell, or a
class whose instances have that method; the class is built with the
--policy-arg values as keyword arguments (strings). It plays through a
Python game loop, about two thousand times slower than compiled greedy
(`python benchmarks/policy_speed.py --policy greedy --policy
examples/python_policy.py:FewestFaceDown`: 266 against 579,944 games/s).
"""


class FewestFaceDown:
    """The cell leaving the fewest face-down top cards; ties: a new pile (if prefer_new), then the lowest cell."""

    def __init__(self, prefer_new: str = "yes"):
        if prefer_new not in ("yes", "no"):
            raise ValueError(f"prefer_new must be yes or no, not {prefer_new!r}")
        self.prefer_new = prefer_new == "yes"

    def choose(self, position, card):
        best = None
        for cell in position.legal_cells():
            board = position.board()  # a copy to try the placement on
            new_pile = board.top(cell) is None
            board.place(cell, card)
            key = (board.face_down_count, -int(new_pile and self.prefer_new), cell)
            if best is None or key < best[0]:
                best = (key, cell)
        return best[1]
