"""Policy parameters: what `--policy-arg NAME=VALUE` may set, and how each value is read.

Each policy module declares its own ``PARAMS`` (a tuple of `Param`) in the
order of the float64 params array its ``choose`` receives; the registry
(`policies.build_params`) only walks them.
"""

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


MAX_FILE_BYTES = 1 << 24
"""Bytes a weights or values file may hold (16 MiB; planner's shipped values hold 26 KB): a file named by a
--policy-arg, or by a run's manifest on resume, is read whole, so a larger one is refused before it is read."""


def read_json(path, what: str):
    """The JSON in a weights or values file; ValueError "`what`: not readable JSON (...)" when it cannot be read
    or parsed, and refused before it is read whole when it holds more than MAX_FILE_BYTES."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ValueError(f"{what}: not readable JSON ({e})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path} holds more than {MAX_FILE_BYTES:,} bytes, more than a weights or values file does")
    try:
        return json.loads(data)
    except ValueError as e:
        raise ValueError(f"{what}: not readable JSON ({e})") from None


def json_float(value) -> float:
    """A number read from a weights or values file, as a float. TypeError when `value` is not a number (JSON's
    true and false are not numbers, though Python's bool is an int); OverflowError when it is an integer beyond
    a float's range (JSON's integers have no bound). NaN and the infinities (Python's json reads them) come back
    as they are: each caller says whether it takes them, in its own words."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{short_repr(value)} is not a number")
    return float(value)


def short_repr(value) -> str:
    """A weights or values file's entry for an error line: a long one (JSON's integers have no bound) cut to its
    start."""
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


@dataclass(frozen=True)
class Param:
    """One parameter a policy takes from ``--policy-arg NAME=VALUE``."""

    name: str
    """Name on the command line."""
    default: str
    """Default, as text."""
    help: str
    """One line for `sim policies`."""
    parse: Callable[[str], Sequence[float]] = field(compare=False, repr=False)
    """Text -> the values it adds to the params array; ValueError saying what is wrong."""
    reads: Callable[[str], Sequence[str]] | None = field(default=None, compare=False, repr=False)
    """Text -> the package's own files it reads (the shipped data a default stands for), whose digests a run
    records as it does a file the user names; None: none."""

    def normal(self, text: str) -> str:
        """The text a run records for `text`: a number as the value the policy uses, so that samples=1_0 and
        samples=10 (margin=1e0 and margin=1) are one setting, one manifest entry and one directory name; any
        other text (a name, a file, a list of weights) as given."""
        try:
            value = float(text)
            if self.parse(text) != [value]:
                return text
        except ValueError:
            return text
        return str(int(value)) if value.is_integer() else repr(value)


def whole_number(text: str) -> int | None:
    """`text` as a whole number, written as -n takes one (64, 6_4, 6.4e1); None when it is not one."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def integer(policy: str, name: str, low: int, high: int) -> Callable[[str], list[float]]:
    """A parser of a whole number in low..high."""

    def parse(text: str) -> list[float]:
        value = whole_number(text)
        if value is None or not low <= value <= high:
            raise ValueError(f"policy {policy!r}: {name}={text!r} is not an integer {low}..{high}")
        return [float(value)]

    return parse


def choice(policy: str, name: str, values: dict[str, float]) -> Callable[[str], list[float]]:
    """A parser of one of a few names, each standing for a number."""

    def parse(text: str) -> list[float]:
        if text not in values:
            raise ValueError(f"policy {policy!r}: {name}={text!r} is not one of: {', '.join(values)}")
        return [values[text]]

    return parse


def number(policy: str, name: str, low: float) -> Callable[[str], list[float]]:
    """A parser of a finite number of at least `low`."""

    def parse(text: str) -> list[float]:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= low):
            raise ValueError(f"policy {policy!r}: {name}={text!r} is not a number >= {low:g}")
        return [value]

    return parse
