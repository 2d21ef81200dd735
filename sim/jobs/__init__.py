"""The generic chunked job and its two kinds: `sim run` (play) and `sim solve` (solve).

Modules: `runner` (run directory, manifest, chunks, progress, resume), `play`
and `solve` (the two jobs on the runner's interface; `solve_results`, a solve run's rows and summary, which
reading a run needs without the solver), `resume` (either kind,
from its manifest), `pool` (local worker processes), `executors` (local or
Dask), `files` (atomic writes), `logs` (logging from workers), `deal_files`
(decks from a file).
"""
