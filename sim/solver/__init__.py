"""The perfect-information solver: `search` (compiled) and `solver` (`Solver`, `SolveResult`, `solve`).

Its design, and why no pruning rule loses a win, is in docs/solver.md.
"""
