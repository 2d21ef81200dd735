"""The table as an RGB image (``render_mode="rgb_array"``), drawn with numpy alone.

The 7x7 canonical board, one square per cell: green felt for an empty
cell, a white card with its rank in black for a face-up top card, a blue
card with its rank in light blue for a face-down one; one dot per card in
the pile along the card's bottom edge; a red frame around the card placed
last. A strip under the board shows the drawn card.
"""

import numpy as np

from sim import kernels as K

CELL = 36
"""Side of a cell, in pixels."""
SCALE = 3
"""Pixels per dot of the 3x5 digit font."""

FELT = (34, 110, 60)
FACE_UP = (245, 245, 240)
FACE_DOWN = (40, 70, 160)
INK_UP = (20, 20, 20)
INK_DOWN = (170, 190, 240)
MARK = (220, 40, 40)
DOT = (120, 120, 120)

_FONT = {  # 3x5 glyphs, rows top to bottom
    "0": ("111", "101", "101", "101", "111"),
    "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"),
    "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"),
    "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"),
    "7": ("111", "001", "010", "010", "010"),
    "8": ("111", "101", "111", "101", "111"),
    "9": ("111", "101", "111", "001", "111"),
}
_GLYPHS = {ch: np.array([[c == "1" for c in row] for row in rows]) for ch, rows in _FONT.items()}


def _text(image: np.ndarray, text: str, top: int, left: int, colour) -> None:
    """Draw `text` (digits) with its top-left corner at (top, left)."""
    for k, ch in enumerate(text):
        glyph = np.kron(_GLYPHS[ch], np.ones((SCALE, SCALE), bool))
        x = left + k * 4 * SCALE
        image[top:top + glyph.shape[0], x:x + glyph.shape[1]][glyph] = colour


def _card(image: np.ndarray, top: int, left: int, rank: int, face_down: bool, height: int) -> None:
    """A card with its rank centred and one dot per card in its pile."""
    image[top + 2:top + CELL - 2, left + 3:left + CELL - 3] = FACE_DOWN if face_down else FACE_UP
    text = str(rank)
    width = len(text) * 4 * SCALE - SCALE
    _text(image, text, top + 6, left + (CELL - width) // 2, INK_DOWN if face_down else INK_UP)
    for d in range(height):
        x = left + 6 + 4 * d
        image[top + CELL - 7:top + CELL - 5, x:x + 2] = DOT


def draw_rgb(state: np.ndarray, card: int, mark: int | None) -> np.ndarray:
    """The position in `state` (sim.kernels layout) as an (H, W, 3) uint8 image; `card` 0 shows no drawn card."""
    side = K.SIDE * CELL
    image = np.empty((side + CELL, side, 3), np.uint8)
    image[:] = FELT
    image[side:] = (20, 70, 40)
    occupied = int(state[K.OCCUPIED])
    face_down = int(state[K.FACE_DOWN])
    for cell in range(K.CELLS):
        top, left = (cell // K.SIDE) * CELL, (cell % K.SIDE) * CELL
        image[top, left:left + CELL] = (28, 95, 50)  # faint grid lines
        image[top:top + CELL, left] = (28, 95, 50)
        if (occupied >> cell) & 1:
            _card(image, top, left, int(state[K.TOP + cell]), bool((face_down >> cell) & 1),
                  int(state[K.HEIGHT + cell]))
        if cell == mark:
            image[top:top + 2, left:left + CELL] = MARK
            image[top + CELL - 2:top + CELL, left:left + CELL] = MARK
            image[top:top + CELL, left:left + 2] = MARK
            image[top:top + CELL, left + CELL - 2:left + CELL] = MARK
    if card:
        _card(image, side, (side - CELL) // 2, int(card), False, 0)
    return image
