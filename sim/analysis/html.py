"""One self-contained HTML report: the report's tables and its figures as embedded PNGs.

The page has inline CSS and `data:` images only, so it opens with no network
and can be mailed or archived as one file.
"""

import base64
from datetime import datetime, timezone
from html import escape

from sim.analysis.report import RunReport, header_lines, overview_table, tables
from sim.analysis.tables import Table

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1, h2 { font-weight: 600; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; }
th { background: #f3f3f3; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
.note { color: #555; font-size: 0.85em; margin-top: -1em; margin-bottom: 1.5em; }
.warning { color: #a00; font-weight: 600; }
.tables { display: flex; flex-wrap: wrap; gap: 0 3em; align-items: flex-start; }
img { max-width: 100%; }
"""


def table_html(t: Table) -> str:
    """A Table as an HTML table, with its title as caption and its note below."""
    cls = ["l" if t.column_align(i) == "l" else "r" for i in range(len(t.headers))]
    out = ["<div><table>"]
    if t.title:
        out.append(f"<caption>{escape(t.title)}</caption>")
    out.append("<tr>" + "".join(f'<th class="{c}">{escape(h)}</th>' for h, c in zip(t.headers, cls)) + "</tr>")
    for row in t.rows:
        out.append("<tr>" + "".join(f'<td class="{c}">{escape(v)}</td>' for v, c in zip(row, cls)) + "</tr>")
    out.append("</table>")
    if t.note:
        out.append(f'<p class="note">{escape(t.note)}</p>')
    out.append("</div>")
    return "\n".join(out)


def image_html(png: bytes, alt: str) -> str:
    """A PNG embedded as a `data:` image, so the page needs no other file."""
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{escape(alt)}" src="data:image/png;base64,{data}"></p>'


def render_html(reports: list[RunReport], figures: dict[str, bytes], title: str = "Foursquare run report") -> str:
    """The page: overview (several runs), figures, then each run's tables."""
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="note">Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by sim report.</p>']
    if len(reports) > 1:
        body.append(table_html(overview_table(reports)))
    for name, png in figures.items():
        body.append(image_html(png, name.replace("_", " ")))
    for r in reports:
        body.append(f"<h2>{escape(r.name)}</h2>")
        body.append("<pre>" + escape("\n".join(header_lines(r))) + "</pre>")
        body += [f'<p class="warning">Warning: {escape(w)}</p>' for w in r.warnings]
        body.append('<div class="tables">')
        body += [table_html(t) for t in tables(r)]
        body.append("</div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
