"""Turning a `--policy` spec into something that plays: built-ins, plugins, the oracle.

Modules: `plugins` (loading plugins, `Position`, the Python turn loop),
`oracle` (the solver as a player) and `api` (`resolve`, `play`, `trace`,
`play_range`, `play_decks`, `warm_up`, `describe`).
"""
