"""`sim replay --html`: one self-contained page that plays a game turn by turn (or several policies' games
of the same deck side by side).

The page is a template (`TEMPLATE`) with inline CSS, inline JavaScript and
the games as JSON in a `<script type="application/json">` block; the board
is drawn as inline SVG. It loads nothing from anywhere, so it opens from
disk with no network.

What it shows at each turn: the board (each pile's top card with its rank,
face-down tops as card backs, the pile's height as pips), the card just
drawn and the stock left, the row and column checks that fired (their line
highlighted) and the cards they turned (outlined and flipped), the
face-down count against the limit, and at the end the reason and the
score. Controls: first, back, play/pause, forward, last, a slider over the
turns, and the keyboard (left/right arrows, space, Home/End).
"""

import json
from datetime import datetime, timezone
from html import escape

from sim import kernels as K
from sim.analysis.replay import Replay, fallback_note, policy_text
from sim.engine.board import Board
from sim.version import __version__


def _window(cells: list[int], grid: int) -> dict:
    """The grid x grid part of the 7x7 board that holds every pile of the game (rows and columns)."""
    rows = [c // K.SIDE for c in cells] or [K.SIDE // 2]
    cols = [c % K.SIDE for c in cells] or [K.SIDE // 2]

    def start(lo: int, hi: int) -> int:
        s = lo - (grid - (hi - lo + 1)) // 2
        return max(max(0, hi - grid + 1), min(s, lo, K.SIDE - grid))

    return {"row0": start(min(rows), max(rows)), "col0": start(min(cols), max(cols)), "size": grid}


def end_text(r: Replay, face_down: int, board: Board | None = None) -> str:
    """How the game ended, in words: the END_NAMES reason and, for a win, the score; for an oracle that found no
    win, that the game is greedy's. `board` (the final table) says, for no_move, that every pile is full."""
    note = fallback_note(r)
    return _end_reason(r, face_down, board) + (f" Note: {note}." if note else "")


def _end_reason(r: Replay, face_down: int, board: Board | None) -> str:
    played = len(r.turns)
    g = r.rules.grid
    if r.end == "win":
        return (f"Won (win) after {played} cards: a full {g}x{g} grid with every top card face up. "
                f"Score {r.score}: the cards left in the stock.")
    if r.end == "too_many_face_down":
        return (f"Lost (too_many_face_down) after {played} cards: {face_down} top cards face down, "
                f"more than the {r.rules.max_face_down} allowed. No score.")
    if r.end == "stock_empty":
        return (f"Lost (stock_empty) after {played} cards: the stock ran out before a full grid "
                "with every top card face up. No score.")
    rank = r.deck[played] if played < len(r.deck) else None
    nxt = "the next card" if rank is None else f"card {played + 1} ({'A' if rank == 1 else rank})"
    full = (board is not None and board.piles == g * g
            and all(board.height(c) == r.rules.max_pile for c in board.occupied))
    cards = f"{r.rules.max_pile} card{'s' * (r.rules.max_pile != 1)}"
    why = f"every pile of the full {g}x{g} grid holds {cards}, so " if full else ""
    return f"Lost ({r.end}) after {played} cards: {why}{nxt} has no legal cell. No score."


def game_data(r: Replay) -> dict:
    """One replayed game as the page's JSON: every turn with the whole table after it."""
    board = Board(r.rules)
    turns = []
    for t in r.turns:
        board.place(t.cell, t.card)
        turns.append({
            "card": t.card, "cell": t.cell, "newPile": t.new_pile, "rowFired": t.row_fired,
            "colFired": t.col_fired, "turned": list(t.turned), "faceDown": t.face_down,
            "piles": board.piles,
            "table": [[c, board.top(c), int(board.is_face_down(c)), board.height(c)] for c in board.occupied],
        })
    final_face_down = board.face_down_count
    return {
        "policy": r.policy, "policyArgs": r.policy_args, "label": policy_text(r),
        "end": r.end, "score": r.score, "won": r.end == "win",
        "cardsPlayed": len(r.turns), "endText": end_text(r, final_face_down, board),
        "window": _window(list(board.occupied), r.rules.grid), "turns": turns,
    }


def replay_data(replays: list[Replay], source: str = "", command: str | None = None,
                when: datetime | None = None) -> dict:
    """Everything the page shows, as JSON-ready data: the deck, the rules, each policy's game, provenance."""
    if not replays:
        raise ValueError("a replay page needs at least one game")
    first = replays[0]
    if any(r.deck != first.deck or r.rules != first.rules for r in replays):
        raise ValueError("the games of one replay page must share the deck and the rules")
    when = when or datetime.now(timezone.utc)
    return {
        "deck": list(first.deck), "source": source, "rules": first.rules.as_dict(),
        "maxFaceDown": first.rules.max_face_down, "maxPile": first.rules.max_pile, "grid": first.rules.grid,
        "side": K.SIDE, "command": command or "", "version": __version__, "date": f"{when:%Y-%m-%d %H:%M} UTC",
        "games": [game_data(r) for r in replays],
    }


def _json_for_script(data: dict) -> str:
    """JSON that is safe inside a <script> element (no `</script>` or `<!--` can end or open anything)."""
    return (json.dumps(data, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def replay_page(replays: list[Replay], source: str = "", command: str | None = None,
                when: datetime | None = None) -> str:
    """The self-contained HTML page that replays the games (one per policy, same deck) turn by turn."""
    data = replay_data(replays, source, command, when)
    policies = " vs ".join(g["label"] for g in data["games"])
    title = f"Foursquare replay: {policies}" + (f", {source}" if source else "")
    return (TEMPLATE.replace("__TITLE__", escape(title))
            .replace("__DATA__", _json_for_script(data)))


TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
:root { --felt: #1f6b45; --felt-dark: #17553a; --ink: #1d1d1f; --accent: #f2b33d; --turn: #ff7a1a;
        --placed: #4fc3f7; --back: #25407a; --muted: #5b6270; }
* { box-sizing: border-box; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       background: #eef1ef; }
header { padding: 0.8em 1.2em 0.4em; }
h1 { font-size: 1.35em; margin: 0 0 0.2em; font-weight: 650; overflow-wrap: anywhere; }  /* a plugin's path breaks */
.meta { color: var(--muted); font-size: 0.8em; margin: 0; }
.meta code { background: #e2e6e3; padding: 0.05em 0.3em; border-radius: 3px; }
.controls { position: sticky; top: 0; z-index: 5; display: flex; flex-wrap: wrap; align-items: center;
            gap: 0.5em; padding: 0.55em 1.2em; background: #fff; border-bottom: 1px solid #d5dad6;
            box-shadow: 0 1px 4px rgba(0,0,0,0.06); }
.controls button { font: inherit; font-size: 1em; min-width: 2.4em; padding: 0.25em 0.6em; border-radius: 6px;
                   border: 1px solid #b9c0bb; background: #f7f8f7; cursor: pointer; }
.controls button:hover { background: #e9ecea; }
.controls button.play { min-width: 5.5em; font-weight: 600; }
#slider { flex: 1 1 14em; min-width: 10em; accent-color: var(--felt); }
#turnLabel { font-variant-numeric: tabular-nums; min-width: 8.5em; font-weight: 600; }
.keys { color: var(--muted); font-size: 0.78em; }
.stock { display: flex; flex-wrap: wrap; gap: 3px; padding: 0.5em 1.2em 0; align-items: center; }
.stock .lbl { color: var(--muted); font-size: 0.78em; margin-right: 0.4em; }
.chip { width: 1.7em; height: 1.45em; border-radius: 3px; font-size: 0.75em; display: inline-flex;
        align-items: center; justify-content: center; background: #fff; border: 1px solid #c8cec9;
        font-variant-numeric: tabular-nums; }
.chip.used { background: #dfe3e0; color: #9aa19c; border-color: #dfe3e0; }
.chip.now { background: var(--accent); border-color: #c98c12; font-weight: 700; color: #000; }
main { display: flex; flex-wrap: wrap; gap: 1.2em; padding: 0.8em 1.2em 1.5em; align-items: flex-start; }
.game { background: #fff; border-radius: 10px; box-shadow: 0 1px 5px rgba(0,0,0,0.12); padding: 0.8em 1em 1em;
        flex: 0 1 auto; max-width: 100%; }
.game h2 { font-size: 1.1em; margin: 0 0 0.4em; display: flex; flex-wrap: wrap; gap: 0 0.6em; align-items: baseline;
           overflow-wrap: anywhere; }
.game h2 .sub { font-weight: 400; color: var(--muted); font-size: 0.85em; }
.row { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.board { background: var(--felt); border-radius: 10px; display: block; max-width: 100%; height: auto; }
.side { width: 170px; display: flex; flex-direction: column; gap: 0.7em; font-size: 0.9em; }
.side .box { background: #f4f6f5; border-radius: 8px; padding: 0.5em 0.6em; }
.side .k { color: var(--muted); font-size: 0.8em; text-transform: uppercase; letter-spacing: 0.04em; }
.side .v { font-size: 1.15em; font-weight: 650; font-variant-numeric: tabular-nums; }
.pips { display: flex; gap: 4px; margin-top: 0.3em; flex-wrap: wrap; }
.pip { width: 15px; height: 21px; border-radius: 3px; border: 1.5px dashed #9aa39d; background: #fff; }
.pip.on { background: var(--back); border: 1.5px solid #14264d; }
.pip.over { background: #d32f2f; border: 1.5px solid #8e1111; }
.over-text { color: #c62828; }
.log { margin-top: 0.7em; font-size: 0.9em; min-height: 3.2em; width: 0; min-width: 100%; }
.log .checks span { display: inline-block; padding: 0.05em 0.45em; border-radius: 4px; margin-right: 0.3em;
                    font-size: 0.9em; }
.fired { background: #fde7b0; color: #6b4700; font-weight: 600; }
.quiet { background: #eceeed; color: #6b716d; }
.end { margin-top: 0.6em; padding: 0.55em 0.8em; border-radius: 8px; display: none; width: 0; min-width: 100%; }
.end.show { display: block; animation: fadein 0.5s ease; }
.end.win { background: #dff3e4; color: #135c2a; border: 1px solid #9fd3ad; }
.end.lost { background: #fde2e1; color: #8e1b1b; border: 1px solid #f0a9a6; }
.end .big { font-size: 1.15em; font-weight: 650; }
@keyframes fadein { from { opacity: 0; } to { opacity: 1; } }
@keyframes flip { 0% { transform: scaleX(1); } 45% { transform: scaleX(0.02); } 55% { transform: scaleX(0.02); }
                  100% { transform: scaleX(1); } }
@keyframes drop { 0% { transform: translateY(-26px) scale(1.12); opacity: 0; }
                  100% { transform: translateY(0) scale(1); opacity: 1; } }
@keyframes glow { 0% { opacity: 0; } 30% { opacity: 1; } 100% { opacity: 0.75; } }
svg .anim-flip { transform-box: fill-box; transform-origin: center; animation: flip 0.6s ease-in-out; }
svg .anim-drop { transform-box: fill-box; transform-origin: center; animation: drop 0.35s ease-out; }
svg .band { animation: glow 0.7s ease-out forwards; }
footer { color: var(--muted); font-size: 0.78em; padding: 0 1.2em 1.2em; }
.legend { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: center; }
.legend svg { vertical-align: middle; margin-right: 0.3em; }
@media (max-width: 640px) {  /* a phone: the board fills the width, the boxes go under it, two by two */
  main { padding: 0.6em 0.5em 1em; }
  .game { padding: 0.6em 0.6em 0.8em; }
  .side { width: 100%; flex-direction: row; flex-wrap: wrap; gap: 0.5em; }
  .side .box { flex: 1 1 40%; }
}
@media (prefers-reduced-motion: reduce) { svg .anim-flip, svg .anim-drop, svg .band, .end.show { animation: none; } }
</style>
</head>
<body>
<header>
  <h1 id="title">__TITLE__</h1>
  <p class="meta" id="meta"></p>
</header>
<div class="controls" role="toolbar" aria-label="replay controls">
  <button id="first" title="first (Home)" aria-label="first">|&#x25C0;</button>
  <button id="back" title="step back (left arrow)" aria-label="step back">&#x25C0;</button>
  <button id="play" class="play" title="play/pause (space)" aria-label="play">&#x25B6; play</button>
  <button id="fwd" title="step forward (right arrow)" aria-label="step forward">&#x25B6;</button>
  <button id="last" title="last (End)" aria-label="last">&#x25B6;|</button>
  <input id="slider" type="range" min="0" max="1" value="0" step="1" aria-label="turn">
  <span id="turnLabel"></span>
  <span class="keys">&larr; &rarr; step &middot; space play/pause &middot; Home/End</span>
</div>
<div class="stock" id="stock"></div>
<main id="games"></main>
<footer>
  <div class="legend" id="legend"></div>
</footer>
<script type="application/json" id="replay-data">__DATA__</script>
<script>
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("replay-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var CW = 84, CH = 112, CARD_W = 64, CARD_H = 88, MARGIN = 26;
  var games = DATA.games;
  var maxTurns = Math.max.apply(null, games.map(function (g) { return g.cardsPlayed; }));
  var step = 0, timer = null;

  function rankText(r) { return r === 1 ? "A" : String(r); }
  function cellName(c) { return "r" + Math.floor(c / DATA.side) + " c" + (c % DATA.side) + " (cell " + c + ")"; }
  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function html(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  // --- header, legend, stock strip ---------------------------------------------------------------
  var meta = document.getElementById("meta");
  var rules = Object.keys(DATA.rules).map(function (k) { return k + "=" + DATA.rules[k]; }).join(", ");
  meta.innerHTML = "";
  if (DATA.command) { meta.appendChild(document.createTextNode("Made by ")); html("code", "", DATA.command, meta);
                      meta.appendChild(document.createTextNode(" \u00b7 ")); }
  meta.appendChild(document.createTextNode("foursquare-sim " + DATA.version + " \u00b7 " + DATA.date +
      " \u00b7 deck: " + (DATA.source || "given") + " \u00b7 rules: " + rules));

  var chips = [];
  var stock = document.getElementById("stock");
  html("span", "lbl", "stock, in draw order:", stock);
  DATA.deck.forEach(function (r, i) {
    var c = html("span", "chip", rankText(r), stock);
    c.title = "card " + (i + 1) + ": " + rankText(r);
    chips.push(c);
  });

  function legendCard(label, draw) {
    var item = html("span", "", null, document.getElementById("legend"));
    var s = el("svg", {width: 26, height: 30, viewBox: "0 0 26 30"}, item);
    draw(s);
    item.appendChild(document.createTextNode(label));
  }
  legendCard("face up", function (s) { faceUp(s, 3, 2, 20, 26, 7, 10); });
  legendCard("face down (its rank small)", function (s) { faceDown(s, 3, 2, 20, 26, 7, 10); });
  legendCard("card just placed", function (s) { faceUp(s, 3, 2, 20, 26, 7, 10);
    el("rect", {x: 2, y: 1, width: 22, height: 28, rx: 4, fill: "none", stroke: "#4fc3f7", "stroke-width": 2.5}, s); });
  legendCard("turned over by a check", function (s) { faceDown(s, 3, 2, 20, 26, 7, 10);
    el("rect", {x: 2, y: 1, width: 22, height: 28, rx: 4, fill: "none", stroke: "#ff7a1a", "stroke-width": 2.5}, s); });
  legendCard("row/column whose check fired", function (s) {
    el("rect", {x: 0, y: 8, width: 26, height: 14, rx: 3, fill: "#f2b33d", opacity: 0.6}, s); });
  legendCard("pile height (pips)", function (s) {
    for (var i = 0; i < 4; i++) { el("circle", {cx: 5 + i * 5.5, cy: 15, r: 2.2, fill: i < 3 ? "#fff" : "none",
                                            stroke: "#fff", "stroke-width": 1}, s); }
    s.setAttribute("style", "background:#1f6b45;border-radius:3px"); });

  // --- cards -------------------------------------------------------------------------------------
  function faceUp(parent, x, y, w, h, rank, fs) {
    var g = el("g", {}, parent);
    el("rect", {x: x, y: y, width: w, height: h, rx: Math.max(3, w / 10), fill: "#fffdf7", stroke: "#3a3a3a",
                "stroke-width": 1}, g);
    var colour = "#1d1d1f";
    var big = el("text", {x: x + w / 2, y: y + h / 2 + fs * 0.36, "text-anchor": "middle", "font-size": fs,
                          "font-weight": 700, fill: colour, "font-family": "Georgia, serif"}, g);
    big.textContent = rankText(rank);
    if (w > 30) {
      var small = el("text", {x: x + 5, y: y + 14, "font-size": 12, "font-weight": 700, fill: colour,
                              "font-family": "Georgia, serif"}, g);
      small.textContent = rankText(rank);
      var small2 = el("text", {x: x + w - 5, y: y + h - 6, "font-size": 12, "font-weight": 700, fill: colour,
                               "text-anchor": "end", "font-family": "Georgia, serif"}, g);
      small2.textContent = rankText(rank);
    }
    return g;
  }
  function faceDown(parent, x, y, w, h, rank, fs) {
    var g = el("g", {}, parent);
    el("rect", {x: x, y: y, width: w, height: h, rx: Math.max(3, w / 10), fill: "#25407a", stroke: "#0f1f42",
                "stroke-width": 1}, g);
    el("rect", {x: x + 3, y: y + 3, width: w - 6, height: h - 6, rx: Math.max(2, w / 14), fill: "url(#backPattern)",
                stroke: "#9fb3e0", "stroke-width": 0.8}, g);
    if (w > 30) {
      var t = el("text", {x: x + w - 6, y: y + h - 7, "text-anchor": "end", "font-size": 11, fill: "#dbe4fb",
                          "font-weight": 600}, g);
      t.textContent = "(" + rankText(rank) + ")";
    }
    return g;
  }
  function defs(svg) {
    var d = el("defs", {}, svg);
    var p = el("pattern", {id: "backPattern", width: 8, height: 8, patternUnits: "userSpaceOnUse",
                           patternTransform: "rotate(45)"}, d);
    el("rect", {width: 8, height: 8, fill: "#2f5196"}, p);
    el("rect", {width: 3, height: 8, fill: "#3d62ad"}, p);
  }

  // --- one game's panel --------------------------------------------------------------------------
  var panels = games.map(function (g, i) {
    var root = html("section", "game", null, document.getElementById("games"));
    var h = html("h2", "", null, root);
    html("span", "", g.label, h);
    var sub = html("span", "sub", "", h);
    var row = html("div", "row", null, root);
    var size = g.window.size;
    var W = MARGIN + size * CW + 6, H = MARGIN + size * CH + 6;
    var svg = el("svg", {class: "board", width: W, height: H, viewBox: "0 0 " + W + " " + H,
                         role: "img", "aria-label": "board of " + g.label}, row);
    defs(svg);
    var side = html("div", "side", null, row);
    var drawnBox = html("div", "box", null, side);
    html("div", "k", "card drawn", drawnBox);
    var drawnSvg = el("svg", {width: 150, height: 66, viewBox: "0 0 150 66"}, drawnBox);
    defs(drawnSvg);
    var stockBox = html("div", "box", null, side);
    html("div", "k", "stock left", stockBox);
    var stockV = html("div", "v", "", stockBox);
    var fdBox = html("div", "box", null, side);
    html("div", "k", "face down / limit", fdBox);
    var fdV = html("div", "v", "", fdBox);
    var fdPips = html("div", "pips", null, fdBox);
    var pileBox = html("div", "box", null, side);
    html("div", "k", "piles", pileBox);
    var pileV = html("div", "v", "", pileBox);
    var log = html("div", "log", null, root);
    var end = html("div", "end", null, root);
    end.setAttribute("data-end", g.end);
    end.setAttribute("data-score", g.score === null ? "" : String(g.score));
    end.setAttribute("id", "end-" + i);
    return {g: g, root: root, sub: sub, svg: svg, drawnSvg: drawnSvg, stockV: stockV, fdV: fdV, fdPips: fdPips,
            pileV: pileV, log: log, end: end, W: W, H: H};
  });

  function cellXY(p, cell) {
    var r = Math.floor(cell / DATA.side) - p.g.window.row0, c = (cell % DATA.side) - p.g.window.col0;
    return {x: MARGIN + c * CW, y: MARGIN + r * CH, r: r, c: c};
  }

  function drawBoard(p, t, animate) {
    var svg = p.svg, g = p.g, size = g.window.size;
    while (svg.childNodes.length > 1) { svg.removeChild(svg.lastChild); }  // keep <defs>
    var turn = t > 0 ? g.turns[Math.min(t, g.cardsPlayed) - 1] : null;
    var fresh = animate && turn && t <= g.cardsPlayed;
    // labels: canonical rows and columns
    for (var k = 0; k < size; k++) {
      var tc = el("text", {x: MARGIN + k * CW + CW / 2, y: 17, "text-anchor": "middle", "font-size": 12,
                           fill: "#cfe6d8"}, svg);
      tc.textContent = "c" + (g.window.col0 + k);
      var tr = el("text", {x: 13, y: MARGIN + k * CH + CH / 2 + 4, "text-anchor": "middle", "font-size": 12,
                           fill: "#cfe6d8"}, svg);
      tr.textContent = "r" + (g.window.row0 + k);
    }
    // the line of a check that fired
    if (turn && t <= g.cardsPlayed) {
      var at = cellXY(p, turn.cell);
      if (turn.rowFired) {
        el("rect", {class: fresh ? "band" : "", x: MARGIN - 3, y: at.y + 2, width: size * CW + 2, height: CH - 4,
                    rx: 8, fill: "#f2b33d", opacity: 0.75}, svg);
      }
      if (turn.colFired) {
        el("rect", {class: fresh ? "band" : "", x: at.x + 1, y: MARGIN - 3, width: CW - 2, height: size * CH + 2,
                    rx: 8, fill: "#f2b33d", opacity: 0.75}, svg);
      }
    }
    // empty slots of the grid
    for (var r = 0; r < size; r++) {
      for (var c = 0; c < size; c++) {
        el("rect", {x: MARGIN + c * CW + (CW - CARD_W) / 2, y: MARGIN + r * CH + 6, width: CARD_W, height: CARD_H,
                    rx: 6, fill: "none", stroke: "#5d9c7a", "stroke-width": 1, "stroke-dasharray": "4 4"}, svg);
      }
    }
    if (!turn) { return; }
    var turned = {};
    if (t <= g.cardsPlayed) { turn.turned.forEach(function (c) { turned[c] = true; }); }
    turn.table.forEach(function (pile) {
      var cell = pile[0], rank = pile[1], down = pile[2] === 1, height = pile[3];
      var xy = cellXY(p, cell);
      var x = xy.x + (CW - CARD_W) / 2, y = xy.y + 6;
      var grp = el("g", {"data-cell": cell, "data-face": down ? "down" : "up", "data-height": height}, svg);
      for (var j = Math.min(height, 4) - 1; j > 0; j--) {  // the edges of the cards underneath
        el("rect", {x: x + 2.5 * j, y: y - 2.5 * j, width: CARD_W, height: CARD_H, rx: 6, fill: "#e8e2d0",
                    stroke: "#6b6b6b", "stroke-width": 0.8}, grp);
      }
      var card = (down ? faceDown : faceUp)(grp, x, y, CARD_W, CARD_H, rank, 30);
      card.setAttribute("class", fresh && cell === turn.cell ? "anim-drop" : fresh && turned[cell] ? "anim-flip" : "");
      if (t <= g.cardsPlayed && cell === turn.cell) {
        el("rect", {x: x - 3, y: y - 3, width: CARD_W + 6, height: CARD_H + 6, rx: 8, fill: "none",
                    stroke: "#4fc3f7", "stroke-width": 3}, grp);
      } else if (turned[cell]) {
        el("rect", {x: x - 3, y: y - 3, width: CARD_W + 6, height: CARD_H + 6, rx: 8, fill: "none",
                    stroke: "#ff7a1a", "stroke-width": 3}, grp);
      }
      // Pile height as pips under the card: one row, or two for piles of more than 4, both clear of the edges
      // of a pile of 4 or more on the row below (its top edge is 7.5 px above its card, 16.5 px under this one).
      var perRow = DATA.maxPile > 4 ? Math.ceil(DATA.maxPile / 2) : DATA.maxPile;
      for (var q = 0; q < DATA.maxPile; q++) {
        var line = Math.floor(q / perRow), inRow = Math.min(perRow, DATA.maxPile - line * perRow);
        el("circle", {cx: xy.x + CW / 2 + (q % perRow - (inRow - 1) / 2) * 9,
                      cy: y + CARD_H + (perRow < DATA.maxPile ? 7 + 6 * line : 10), r: perRow < DATA.maxPile ? 2.2 : 3,
                      fill: q < height ? "#ffffff" : "none", stroke: "#d8efe2", "stroke-width": 1}, grp);
      }
      var tip = el("title", {}, grp);
      tip.textContent = cellName(cell) + ": " + (down ? "face down " : "face up ") + rankText(rank) +
                        ", pile of " + height;
    });
  }

  function drawDrawn(p, t) {
    var s = p.drawnSvg;
    while (s.childNodes.length > 1) { s.removeChild(s.lastChild); }
    var g = p.g;
    if (t === 0 || t > g.cardsPlayed) {
      var txt = el("text", {x: 4, y: 38, "font-size": 13, fill: "#5b6270"}, s);
      txt.textContent = t === 0 ? "none yet" : "game over";
      return;
    }
    var turn = g.turns[t - 1];
    faceUp(s, 4, 4, 42, 58, turn.card, 22);
    var d = el("text", {x: 54, y: 28, "font-size": 12, fill: "#1d1d1f"}, s);
    d.textContent = "card " + t + " of " + DATA.deck.length;
    var w = el("text", {x: 54, y: 46, "font-size": 12, fill: "#5b6270"}, s);
    w.textContent = "to r" + Math.floor(turn.cell / DATA.side) + " c" + (turn.cell % DATA.side);
  }

  function describe(p, t) {
    var g = p.g, log = p.log;
    log.textContent = "";
    if (t === 0) { log.textContent = "Before the first card: the table is empty and the stock holds " +
                   DATA.deck.length + " cards."; return; }
    if (t > g.cardsPlayed) {
      log.textContent = "The game ended after turn " + g.cardsPlayed + ".";
      return;
    }
    var turn = g.turns[t - 1];
    var line = html("div", "", null, log);
    line.appendChild(document.createTextNode("Turn " + t + ": drew " + rankText(turn.card) + ", placed on " +
        cellName(turn.cell) + (turn.newPile ? ", a new pile." : ", on a pile.")));
    var checks = html("div", "checks", null, log);
    html("span", turn.rowFired ? "fired" : "quiet", "row check " + (turn.rowFired ? "fired" : "did not fire"), checks);
    html("span", turn.colFired ? "fired" : "quiet", "column check " + (turn.colFired ? "fired" : "did not fire"), checks);
    checks.appendChild(document.createTextNode(turn.turned.length ?
        "turned: " + turn.turned.map(function (c) { return "r" + Math.floor(c / DATA.side) + " c" + (c % DATA.side); }).join(", ")
        : "no card turned"));
  }

  function show(t, animate) {
    step = Math.max(0, Math.min(maxTurns, t));
    document.getElementById("slider").value = String(step);
    document.getElementById("turnLabel").textContent = "turn " + step + " of " + maxTurns;
    chips.forEach(function (c, i) { c.className = "chip" + (i < step - 1 ? " used" : i === step - 1 ? " now" : ""); });
    panels.forEach(function (p) {
      var g = p.g, shown = Math.min(step, g.cardsPlayed);
      var turn = shown > 0 ? g.turns[shown - 1] : null;
      drawBoard(p, step, animate);
      drawDrawn(p, step);
      p.stockV.textContent = (DATA.deck.length - shown) + (DATA.deck.length - shown === 1 ? " card" : " cards");
      var fd = turn ? turn.faceDown : 0;
      p.fdV.textContent = fd + " / " + DATA.maxFaceDown;
      p.fdV.className = "v" + (fd > DATA.maxFaceDown ? " over-text" : "");
      p.fdPips.textContent = "";
      for (var i = 0; i < Math.max(DATA.maxFaceDown, fd); i++) {
        html("span", "pip" + (i < fd ? (i >= DATA.maxFaceDown ? " over" : " on") : ""), null, p.fdPips);
      }
      p.pileV.textContent = (turn ? turn.piles : 0) + " / " + (DATA.grid * DATA.grid);
      p.sub.textContent = g.won ? "won, score " + g.score : "lost: " + g.end;
      describe(p, step);
      var over = step >= g.cardsPlayed;
      p.end.className = "end " + (g.won ? "win" : "lost") + (over ? " show" : "");
      if (over && p.end.childNodes.length === 0) {
        html("div", "big", g.won ? "Won \u2014 score " + g.score : "Lost \u2014 " + g.end, p.end);
        html("div", "", g.endText, p.end);
      }
    });
  }

  // --- controls ----------------------------------------------------------------------------------
  var slider = document.getElementById("slider");
  slider.max = String(maxTurns);
  var playBtn = document.getElementById("play");
  function setPlaying(on) {
    if (on && step >= maxTurns) { show(0, false); }
    if (timer) { clearInterval(timer); timer = null; }
    if (on) {
      timer = setInterval(function () {
        if (step >= maxTurns) { setPlaying(false); return; }
        show(step + 1, true);
      }, 900);
    }
    playBtn.innerHTML = on ? "&#x275A;&#x275A; pause" : "&#x25B6; play";
    playBtn.setAttribute("aria-label", on ? "pause" : "play");
  }
  function go(t) { setPlaying(false); show(t, t === step + 1); }
  document.getElementById("first").onclick = function () { go(0); };
  document.getElementById("back").onclick = function () { go(step - 1); };
  document.getElementById("fwd").onclick = function () { go(step + 1); };
  document.getElementById("last").onclick = function () { go(maxTurns); };
  playBtn.onclick = function () { setPlaying(!timer); };
  slider.oninput = function () { setPlaying(false); show(parseInt(slider.value, 10), false); };
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "INPUT" && e.target.type !== "range") { return; }
    if (e.key === "ArrowRight") { go(step + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { go(step - 1); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(maxTurns); e.preventDefault(); }
    else if (e.key === " " || e.key === "Spacebar") { setPlaying(!timer); e.preventDefault(); }
  });
  show(0, false);
})();
</script>
</body>
</html>
"""
"""The page: `__TITLE__` and `__DATA__` (the JSON of `replay_data`) are filled in by `replay_page`."""
