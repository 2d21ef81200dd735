"""The game without I/O: rule options, decks, the board, results and the compiled game loop.

Modules: `rules` (Rules), `cards` (dealing and checking decks), `board`
(Board, Placement), `results` (what a game or a batch produced) and `loop`
(the compiled game loop of each policy).
"""
