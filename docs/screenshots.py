"""Make the README's screenshots: docs/replay.png, docs/report.png, docs/compare.png, docs/sweep.png.

    python docs/screenshots.py [--work DIR] [-n 20000]

Plays the runs the pages show under DIR/results (reused when already there),
writes the pages with `sim replay/report/compare/sweep --html`, opens each in
headless Chromium (the system's binary, as tests/test_browser.py finds it) and
saves the top of the page, scaled down and reduced to a palette so each file
stays well under 200 KB.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "tests"))
from test_browser import LAUNCH_ARGS, find_browser  # noqa: E402


def sim(work: Path, *args: str) -> None:
    """Run one `sim` command in the work directory, quietly."""
    subprocess.run([sys.executable, "-m", "sim", *args, "-q"], cwd=work, check=True, stdout=subprocess.DEVNULL)


def shoot(browser, page_file: Path, out: Path, keys=(), height: int = 1000, width: int = 1280,
          scale: float = 0.72) -> None:
    """Open the page, press `keys`, save the top `height` pixels scaled by `scale` as a palette PNG."""
    context = browser.new_context(viewport={"width": width, "height": height}, offline=True)
    page = context.new_page()
    page.goto(page_file.resolve().as_uri())
    for key in keys:
        page.keyboard.press(key)
    page.wait_for_timeout(1200)  # let the turn's animations finish
    raw = out.with_suffix(".raw.png")
    page.screenshot(path=str(raw))
    context.close()
    img = Image.open(raw).convert("RGB")
    img = img.resize((round(img.width * scale), round(img.height * scale)), Image.LANCZOS)
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(out, optimize=True)
    raw.unlink()
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KB)")


def main() -> None:
    """Play, write the pages, take the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None, help="where the runs and pages go (default: a temp dir)")
    parser.add_argument("-n", default="20000", help="games per run")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="sim-screens-"))
    work.mkdir(parents=True, exist_ok=True)
    n = args.n
    sim(work, "replay", "--seed", "0", "--game", "5", "-p", "greedy", "-p", "heuristic", "--html", "replay.html")
    sim(work, "compare", "--policy", "greedy", "--policy", "heuristic", "-n", n, "--html", "compare.html")
    sim(work, "sweep", "-n", n, "--rule", "max_face_down=3,4,5", "--rule", "max_pile=3,4", "--html", "sweep.html")
    runs = [f"results/greedy-seed0-n{n}", f"results/heuristic-seed0-n{n}", f"results/greedy-seed0-n{n}-max_face_down5"]
    sim(work, "report", *runs, "--html", "report.html")

    from playwright.sync_api import sync_playwright

    executable = find_browser()
    if executable is None:
        sys.exit("no Chromium binary found: apt-get install chromium-headless-shell, or set SIM_CHROMIUM")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        shoot(browser, work / "replay.html", DOCS / "replay.png", keys=["ArrowRight"] * 10, height=830)
        shoot(browser, work / "report.html", DOCS / "report.png", height=1150)
        shoot(browser, work / "compare.html", DOCS / "compare.png", height=1150)
        shoot(browser, work / "sweep.html", DOCS / "sweep.png", height=1100)
        browser.close()
    if args.work is None:
        print(f"pages and runs in {work}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
