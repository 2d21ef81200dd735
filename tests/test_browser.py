"""The HTML pages in a real browser: headless Chromium, driven by Playwright through the system's binary.

What a person would check: the page draws (a screenshot that is not blank),
the replay's controls step through the game and its last turn shows the end
reason and the score `sim.play` reports, every figure of a report loads, no
script error, and no request leaves the page (every request is routed: only
the page's own file may load; data:, about: and blob: URLs never reach the
network).

The browser is Debian's `chromium-headless-shell` (or `chromium`), which
`.ci/run` installs with apt-get when it is missing; `$SIM_CHROMIUM` names
another binary. Without Playwright's Python package or a browser binary,
these tests are skipped with the reason. Playwright's own browser download
(`playwright install`) is never used.
"""

import io
import os
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageStat
from typer.testing import CliRunner

import sim
from sim.cli import app

cli = CliRunner()

pytestmark = pytest.mark.slow  # a real browser: seconds per page

BROWSER_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_PATHS = ("/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
               "--disable-extensions", "--metrics-recording-only", "--safebrowsing-disable-auto-update"]


def find_browser() -> str | None:
    """The Chromium binary to drive: $SIM_CHROMIUM, a browser on PATH, or Debian's install directory."""
    given = os.environ.get("SIM_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return next((p for p in BROWSER_PATHS if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright's Python package is not installed (pip install -e '.[test]')")
    executable = find_browser()
    if executable is None:
        pytest.skip("no Chromium binary found: install Debian's chromium-headless-shell "
                    "(apt-get install chromium-headless-shell) or set SIM_CHROMIUM")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        yield b
        b.close()


class Opened:
    """A page opened from disk with every request routed, and what it asked for and complained about."""

    def __init__(self, browser, path: Path, width: int = 1280, height: int = 900):
        self.url = path.resolve().as_uri()
        self.context = browser.new_context(viewport={"width": width, "height": height}, offline=True)
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def _route(self, route):
        url = route.request.url
        if url == self.url or url.split(":", 1)[0] in ("data", "about", "blob"):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def left_the_page(self) -> list[str]:
        """Requests for anything but the page itself and data:/about:/blob: URLs (should be none)."""
        own = ("data", "about", "blob")
        return self.blocked + [u for u in self.requests if u != self.url and u.split(":", 1)[0] not in own]

    def screenshot(self) -> Image.Image:
        return Image.open(io.BytesIO(self.page.screenshot(full_page=True))).convert("RGB")

    def close(self):
        self.context.close()


def assert_not_blank(img: Image.Image, min_colours: int = 200) -> None:
    """A screenshot with something drawn: many colours and real contrast, not one flat background."""
    colours = img.getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) >= min_colours, f"only {len(colours or [])} colours"
    assert max(ImageStat.Stat(img).stddev) > 20
    top_share = max(k for k, _ in colours) / (img.width * img.height)
    assert top_share < 0.9, f"{top_share:.0%} of the page is one colour"


def write_replay(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "replay.html"
    res = cli.invoke(app, ["replay", *args, "--html", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def turn_label(page) -> str:
    return page.inner_text("#turnLabel")


@pytest.mark.slow
@pytest.mark.parametrize("policy,seed,game", [("heuristic", 0, 5), ("greedy", 0, 2), ("random", 0, 4)])
def test_replay_page_plays_the_game_to_the_end_sim_play_reports(browser, tmp_path, policy, seed, game):
    deck = sim.deal(seed, game)
    result = sim.play(deck, policy, seed=seed, game=game)
    opened = Opened(browser, write_replay(tmp_path, "--seed", str(seed), "--game", str(game), "--policy", policy))
    page = opened.page
    try:
        assert turn_label(page) == f"turn 0 of {result.cards_played}"
        assert not page.is_visible("#end-0")  # no end before the game is played
        # step forward turn by turn: each turn is the card drawn and the cell sim.play played
        for t in range(1, result.cards_played + 1):
            page.keyboard.press("ArrowRight")
            assert turn_label(page) == f"turn {t} of {result.cards_played}"
            log = page.inner_text(".game .log")
            m = re.search(r"Turn (\d+): drew (\w+), placed on r\d c\d \(cell (\d+)\)", log)
            assert m, log
            rank = {"A": 1}.get(m.group(2)) or int(m.group(2))
            assert (int(m.group(1)), rank, int(m.group(3))) == (t, deck[t - 1], result.moves[t - 1])
            assert page.locator("svg.board g[data-cell]").count() == len(set(result.moves[:t]))
            if t < result.cards_played:
                assert not page.is_visible("#end-0")
        # the last turn: the end reason and the score, and the table as the game left it
        end = page.locator("#end-0")
        assert end.is_visible()
        text = end.inner_text()
        assert result.end in text
        assert end.get_attribute("data-end") == result.end
        if result.won:
            assert f"score {result.score}" in text and end.get_attribute("data-score") == str(result.score)
        else:
            assert "Lost" in text and end.get_attribute("data-score") == ""
        assert page.locator("svg.board g[data-cell]").count() == result.piles
        assert page.locator('svg.board g[data-face="down"]').count() == result.face_down
        assert page.inner_text(".side").count(f"{40 - result.cards_played} cards") == 1
        assert_not_blank(opened.screenshot())
        # back one turn: the end is gone; forward again, it is back; the slider and Home/End move too
        page.keyboard.press("ArrowLeft")
        assert turn_label(page) == f"turn {result.cards_played - 1} of {result.cards_played}"
        assert not end.is_visible()
        page.click("#fwd")
        assert end.is_visible()
        page.keyboard.press("Home")
        assert turn_label(page).startswith("turn 0 ") and page.locator("svg.board g[data-cell]").count() == 0
        page.locator("#slider").fill("3")
        assert turn_label(page).startswith("turn 3 ") and not end.is_visible()
        page.keyboard.press("End")
        assert end.is_visible() and result.end in end.inner_text()
        assert opened.errors == [] and opened.left_the_page() == []
    finally:
        opened.close()


def test_replay_play_button_runs_the_game_on_its_own(browser, tmp_path):
    result = sim.play(sim.deal(0, 5), "heuristic", seed=0, game=5)
    opened = Opened(browser, write_replay(tmp_path, "--seed", "0", "--game", "5", "--policy", "heuristic"))
    page = opened.page
    try:
        page.click("#play")
        page.wait_for_function("document.getElementById('turnLabel').textContent.startsWith('turn 2 ')",
                               timeout=10_000)
        page.keyboard.press("Space")  # pause
        paused = turn_label(page)
        page.wait_for_timeout(1500)
        assert turn_label(page) == paused
        page.keyboard.press("End")
        assert f"score {result.score}" in page.inner_text("#end-0")
        assert opened.errors == [] and opened.left_the_page() == []
    finally:
        opened.close()


def test_two_policies_side_by_side(browser, tmp_path):
    deck = sim.deal(0, 5)
    results = [sim.play(deck, p, seed=0, game=5) for p in ("greedy", "heuristic")]
    opened = Opened(browser, write_replay(tmp_path, "--seed", "0", "--game", "5", "-p", "greedy", "-p", "heuristic"))
    page = opened.page
    try:
        assert page.locator("section.game").count() == 2
        shorter = min(results, key=lambda r: r.cards_played)
        page.locator("#slider").fill(str(shorter.cards_played))
        finished = [page.is_visible(f"#end-{i}") for i in range(2)]
        assert finished == [r.cards_played <= shorter.cards_played for r in results]
        page.keyboard.press("End")
        for i, r in enumerate(results):
            text = page.inner_text(f"#end-{i}")
            assert r.end in text and (r.score is None or f"score {r.score}" in text)
        boards = page.locator("svg.board")
        for i, r in enumerate(results):
            assert boards.nth(i).locator("g[data-cell]").count() == r.piles
        assert_not_blank(opened.screenshot())
        assert opened.errors == [] and opened.left_the_page() == []
    finally:
        opened.close()


def test_pile_height_pips_stay_clear_of_the_pile_below(browser, tmp_path):
    # max_pile=8 draws two lines of pips under a card; a pile of 4 or more on the row below shows the edges of
    # the cards under its top, drawn above its card: no pip may lie under them.
    opened = Opened(browser, write_replay(tmp_path, "--seed", "1", "--game", "2", "--rule", "grid=3",
                                          "--rule", "max_pile=8"))
    page = opened.page
    try:
        page.keyboard.press("End")
        found = page.evaluate("""() => {
          const piles = [...document.querySelectorAll('svg.board g[data-cell]')];
          const box = e => e.getBoundingClientRect();
          const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
          const hits = [];
          let below = 0;
          for (const p of piles) {
            const under = piles.find(q => +q.dataset.cell === +p.dataset.cell + 7 && +q.dataset.height >= 4);
            if (!under) continue;
            below++;
            const edges = [...under.querySelectorAll(':scope > rect')].map(box);
            for (const pip of p.querySelectorAll('circle'))
              if (edges.some(e => meet(box(pip), e))) hits.push(p.dataset.cell);
          }
          return [below, hits];
        }""")
        below, hits = found
        assert below > 0, "no pile above a pile of 4 or more: the page does not show the case"
        assert hits == [], f"pips under the edges of the pile below, at cells {sorted(set(hits))}"
        assert opened.errors == [] and opened.left_the_page() == []
    finally:
        opened.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser-runs")
    return [sim.run(sim.RunConfig(policy=p, n=300, seed=6), workers=1, out=base / p).path for p in ("greedy", "random")]


@pytest.mark.slow
@pytest.mark.parametrize("command,figures", [("report", 4), ("compare", 4)])
def test_report_and_compare_pages_draw_every_figure_offline(browser, runs, tmp_path, command, figures):
    out = tmp_path / f"{command}.html"
    res = cli.invoke(app, [command, *map(str, runs), "--html", str(out), "-q"])
    assert res.exit_code == 0, res.output
    opened = Opened(browser, out)
    page = opened.page
    try:
        images = page.locator("img")
        assert images.count() == figures
        sizes = page.eval_on_selector_all("img", "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight])")
        assert all(done and w >= 400 and h >= 250 for done, w, h in sizes), sizes
        assert "McNemar" in page.inner_text("body") and f"foursquare-sim {sim.__version__}" in page.inner_text("body")
        assert_not_blank(opened.screenshot())
        assert opened.errors == [] and opened.left_the_page() == []
    finally:
        opened.close()


def test_the_route_catches_a_request_that_leaves_the_page(browser, tmp_path):
    # The check itself: a page that asks for a remote image and a stylesheet is caught, not let through.
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><link rel="stylesheet" href="https://example.com/x.css"></head>'
                   '<body><img src="http://example.com/x.png"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw='
                   '"></body></html>')
    opened = Opened(browser, bad)
    try:
        left = opened.left_the_page()
        assert "https://example.com/x.css" in left and "http://example.com/x.png" in left
        assert not any(u.startswith("data:") for u in left)
    finally:
        opened.close()


def test_pages_fit_a_phone_screen_without_scrolling_sideways(browser, runs, tmp_path):
    # At 390 px, wide tables, pair boxes and figures scroll inside their own boxes; the page itself does not.
    replay = write_replay(tmp_path, "--seed", "0", "--game", "5", "-p", "greedy", "-p", "heuristic")
    compare = tmp_path / "compare.html"
    res = cli.invoke(app, ["compare", *map(str, runs), "--html", str(compare), "-q"])
    assert res.exit_code == 0, res.output
    for path in (replay, compare):
        opened = Opened(browser, path, width=390, height=844)
        try:
            page = opened.page
            if path is replay:
                page.keyboard.press("End")
            wide, seen = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert wide <= seen, (path.name, wide, seen)
            assert opened.errors == []
        finally:
            opened.close()


def test_long_names_break_to_fit_a_phone_screen(browser, runs, tmp_path):
    # A plugin's path in the replay's title and board heading, and a run named after a heuristic's seven weights
    # in the report's headings, ran 200 to 400 px past a phone's screen: they now break where they must.
    plugin = str(Path(__file__).resolve().parent.parent / "examples" / "python_policy.py") + ":FewestFaceDown"
    replay = write_replay(tmp_path, "--seed", "0", "--game", "5", "-p", plugin, "-p", "heuristic")
    long = tmp_path / "heuristic-weights1.5_-2.25_0.75_3.125_-0.5_2_1_-3.8167_-16.6057_-2.1969_-1.4487-seed6-n300"
    shutil.copytree(runs[0], long)
    report = tmp_path / "report.html"
    res = cli.invoke(app, ["report", str(long), str(runs[1]), "--html", str(report), "-q"])
    assert res.exit_code == 0, res.output
    for path in (replay, report):
        opened = Opened(browser, path, width=390, height=844)
        try:
            wide, seen = opened.page.evaluate("[document.documentElement.scrollWidth, "
                                              "document.documentElement.clientWidth]")
            assert wide <= seen, (path.name, wide, seen)
        finally:
            opened.close()
