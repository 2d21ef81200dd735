"""The library's errors, in one module with no imports, so a front end can catch them without loading the engine.

Each module that raises one re-exports it where it belongs
(`sim.jobs.runner`, `sim.engine.results`).
"""


class UsageError(ValueError):
    """Bad settings: nothing was run.

    `option` names the setting at fault (a parameter of `run`, or a config
    field) when the message begins with it, so that a front end can say it
    in its own terms (the CLI writes ``--workers`` for ``workers``).
    """

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


class RunError(RuntimeError):
    """A run could not go on (unwritable output, full disk, dead worker); the message says what to do."""


class Interrupted(RuntimeError):
    """Ctrl-C or SIGTERM stopped the run; finished parts are kept."""


class PolicyError(RuntimeError):
    """A policy returned a cell that is not legal, or raised."""


def magnitude(value) -> str:
    """A count as a message shows it: whole below 1e15, else by its magnitude (1e+99), never in a hundred digits."""
    try:
        return str(int(value)) if value < 1e15 else f"{value:.3g}"
    except OverflowError:  # beyond a float's range
        return f"a number of {len(str(int(value)))} digits"


def whole(value):
    """A float that is a whole number (1e6) as an int; anything else as it is, for the caller's check."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def parse_count(text: str, what: str = "n", zero: bool = False) -> int:
    """A positive whole number: 1000000, 1_000_000, 1e6 or 2.5e5; UsageError naming `what` otherwise.

    With `zero`, 0 too (for the options where 0 switches something off).
    """
    import math

    s = str(text).strip().replace("_", "")
    try:
        value = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            raise UsageError(f"{what} {text!r} is not a positive whole number", what) from None
        if not math.isfinite(f) or not f.is_integer():
            raise UsageError(f"{what} {text!r} is not a positive whole number", what) from None
        value = int(f)
    if value < 0 or (value == 0 and not zero):
        raise UsageError(f"{what} {text!r} is not a positive whole number", what)
    return value
