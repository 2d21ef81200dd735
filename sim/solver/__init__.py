"""The perfect-information solver: `search` (compiled), `solver` (`Solver`, `SolveResult`, `solve`)
and `settings` (the outcomes' names and the options' defaults, without numba).

Its design, and why no pruning rule loses a win, is in docs/solver.md.
"""
