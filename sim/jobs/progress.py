"""The progress bar of runs, solves, tune and train: tqdm, sized to the terminal of the stream it draws on."""

import os
import sys

from tqdm import tqdm

FALLBACK_COLUMNS = 80
"""Width assumed when the terminal reports none (a pty of size 0x0, as some containers and CI runners make)
and $COLUMNS names none either: the width `shutil.get_terminal_size` falls back to."""


def terminal_shape(fp) -> tuple[int, int]:
    """(columns, lines) for a bar drawn on `fp`, as tqdm's own `dynamic_ncols` measures them (one column less, so
    that the line never wraps; (None, None) for a stream of no size, as tqdm gives), but never 0 or less: a
    terminal that reports 0 columns gets $COLUMNS, or 80. tqdm would take -1 and draw a bar one character
    wide, then cut the line's last character."""
    try:
        columns, lines = os.get_terminal_size(fp.fileno())
    except Exception:  # no file descriptor, or not a terminal: tqdm's own measure says None too
        return None, None
    if columns <= 0:
        columns = _positive(os.environ.get("COLUMNS")) or FALLBACK_COLUMNS
    if lines <= 0:
        lines = _positive(os.environ.get("LINES")) or 24
    return columns - 1, lines - 1


def _positive(text: str | None) -> int | None:
    try:
        value = int(text or "")
    except ValueError:
        return None
    return value if value > 0 else None


class ProgressBar(tqdm):
    """tqdm whose width and height follow the terminal as it is resized (tqdm's dynamic_ncols), measured by
    `terminal_shape`. tqdm's own measure of a 0x0 pty takes -1 lines, and then draws nothing at all."""

    def __init__(self, *args, file=None, **kwargs):
        columns, lines = terminal_shape(sys.stderr if file is None else file)
        super().__init__(*args, file=file, ncols=columns, nrows=lines, **kwargs)
        if not self.disable:
            self.dynamic_ncols = terminal_shape  # what tqdm calls on the stream at each refresh
