"""Rule options (RULES.md, "Rule options"), validated once in Python."""

from dataclasses import asdict, dataclass, fields

import numpy as np

from sim.fielddocs import documented

ADJACENCIES = ("orthogonal", "king")
RANGES = {"max_pile": (1, 8), "max_face_down": (0, 15), "grid": (2, 4)}


@documented
@dataclass(frozen=True)
class Rules:
    """One setting of the game's rule options; the defaults are RULES.md's."""

    adjacency: str = "orthogonal"
    """Which empty cells next to a pile may open a new pile: "orthogonal" or "king" (diagonals too)."""
    max_pile: int = 4
    """Cards a pile may hold (1..8)."""
    max_face_down: int = 4
    """More face-down top cards than this loses the game (0..15)."""
    grid: int = 4
    """Largest number of rows and of columns (2..4); a win needs grid*grid piles."""

    def __post_init__(self):
        if self.adjacency not in ADJACENCIES:
            raise ValueError(
                f"rule adjacency={self.adjacency!r} is not valid; valid values: {', '.join(ADJACENCIES)}"
            )
        for name, (lo, hi) in RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
                raise ValueError(f"rule {name}={value!r} is not valid; valid values: integers {lo}..{hi}")
            object.__setattr__(self, name, int(value))

    def as_array(self) -> np.ndarray:
        """The int64 array compiled code reads (sim.kernels.RULE_*)."""
        from sim import kernels as K  # here, so that checking --rule values does not load numba

        a = np.zeros(K.RULES_SIZE, np.int64)
        a[K.RULE_KING] = self.adjacency == "king"
        a[K.RULE_MAX_PILE] = self.max_pile
        a[K.RULE_MAX_FACE_DOWN] = self.max_face_down
        a[K.RULE_GRID] = self.grid
        return a

    def as_dict(self) -> dict:
        """Option name -> value, as manifests record the rules."""
        return asdict(self)

    def replace(self, **changes) -> "Rules":
        """These rules with some options changed (validated like any Rules)."""
        return Rules(**{**self.as_dict(), **changes})

    @classmethod
    def from_strings(cls, items: dict[str, str]) -> "Rules":
        """Rules from KEY=VALUE text (the CLI's --rule), with errors naming the valid options."""
        known = [f.name for f in fields(cls)]
        values = {}
        for key, text in items.items():
            if key not in known:
                raise ValueError(f"unknown rule {key!r}; valid rules: {', '.join(known)}")
            if key == "adjacency":
                values[key] = text
            else:
                try:
                    values[key] = int(text)
                except ValueError:
                    lo, hi = RANGES[key]
                    raise ValueError(f"rule {key}={text!r} is not valid; valid values: integers {lo}..{hi}") from None
        return cls(**values)
