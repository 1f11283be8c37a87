"""HTML building blocks shared by the report and the overview: one self-contained page (Plotly's
runtime inlined, a content security policy that allows no request), escaped text, JSON blocks."""

from __future__ import annotations

import base64
import functools
import html
import json
import zlib
from collections.abc import Iterable, Sequence
from importlib import resources

import plotly.graph_objects as go

__all__ = [
    "BUNDLED_TRACES",
    "DRAW_JS",
    "PLOTLY_BUNDLE",
    "UNPACK_JS",
    "Page",
    "esc",
    "figure_data",
    "json_block",
    "pack",
    "plotly_js",
    "table",
]

# Plotly.js's partial "cartesian" bundle, a file of this package (assets/README.md says where it
# comes from): 1.5 MB inlined in each page where the full bundle took 4.8 MB. It draws these trace
# types only; `figure_data` refuses any other, which a page would leave blank.
PLOTLY_BUNDLE = "plotly-cartesian.min.js"
BUNDLED_TRACES = frozenset(
    {
        "bar",
        "box",
        "contour",
        "heatmap",
        "histogram",
        "histogram2d",
        "histogram2dcontour",
        "image",
        "pie",
        "scatter",
        "scatterternary",
        "violin",
    }
)

# Nothing on the page may load anything: scripts and styles are inline, images data: URLs.
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:"

STYLE = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ddd;margin-top:1.6em}
table{border-collapse:collapse;font-size:.88em;margin:.4em 0}td,th{border:1px solid #ddd;padding:.2em .5em;
vertical-align:top;text-align:left}th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}
.problems{background:#fde8e8;border:2px solid #c00;color:#900;padding:.5em 1em}.problems h2{color:#c00;border:0}
.ok{color:#070;font-weight:bold}.bad{color:#c00;font-weight:bold}code,.mono{font-family:ui-monospace,monospace;
font-size:.85em;word-break:break-all}.row{display:flex;gap:1em;flex-wrap:wrap}.row>div{flex:1 1 600px;min-width:0}
#panel{border:1px solid #ccc;padding:.5em 1em;max-height:900px;overflow:auto}details{margin:.2em 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f8f8f8;padding:.4em;margin:.2em 0}.muted{color:#777}
"""


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def json_block(element_id: str, data: object) -> str:
    """`data` as JSON in a non-executed script element; `<`, `>`, `&` escaped so that no text in
    it (model output included) can close the element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


@functools.cache
def plotly_js() -> str:
    """The Plotly.js bundle every page inlines."""
    return (resources.files(__package__) / "assets" / PLOTLY_BUNDLE).read_text(encoding="utf-8")


def pack(data: object) -> str:
    """`data` as JSON, deflated (zlib's format) and in base64: text for a JSON block that the page
    inflates with the browser's own `DecompressionStream` (`UNPACK_JS`) when it needs it."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")


# `pack` undone: base64 to bytes, inflated by the browser (no library, no request), parsed.
UNPACK_JS = """
async function unpack(z){const b=Uint8Array.from(atob(z),c=>c.charCodeAt(0));
 const s=new Blob([b]).stream().pipeThrough(new DecompressionStream('deflate'));
 return JSON.parse(await new Response(s).text());}
"""


def table(header: Sequence[str], rows: Iterable[Sequence[object]], *, raw: frozenset[int] = frozenset()) -> str:
    """A table of escaped cells (the columns in `raw` are HTML this module's callers built)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{esc(c)}</td>' if isinstance(c, int | float) else f"<td>{c if i in raw else esc(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Page:
    """A page in the making: HTML parts, JSON data blocks and scripts, with Plotly's runtime inlined.
    A live page may also connect back to the server it came from (`connect-src 'self'`), nothing else."""

    def __init__(self, title: str, *, live: bool = False) -> None:
        self.title = title
        self.live = live
        self.parts: list[str] = []
        self.data: list[str] = []
        self.scripts: list[str] = []

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def render(self) -> str:
        csp = CSP + ("; connect-src 'self'" if self.live else "")
        return "".join(
            [
                "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
                f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
                f"<title>{esc(self.title)}</title><style>{STYLE}</style>",
                f"<script>{plotly_js()}</script></head><body>",
                *self.parts,
                *self.data,
                *(f"<script>{s}</script>" for s in self.scripts),
                "</body></html>",
            ]
        )


def figure_data(fig: go.Figure) -> dict[str, object]:
    """A figure as the JSON Plotly.js draws (`data`, `layout`); a trace type the page's bundle
    lacks is refused (the page would draw nothing for it, without an error)."""
    missing = {t.type for t in fig.data} - BUNDLED_TRACES
    if missing:
        raise ValueError(f"trace types {sorted(missing)} are not in the pages' Plotly bundle ({PLOTLY_BUNDLE})")
    out: dict[str, object] = json.loads(fig.to_json())
    return out


DRAW_JS = """
function drawFigures(figs){for(const [id,f] of Object.entries(figs)){const d=document.getElementById(id);
 if(d)Plotly.react(d,f.data,f.layout,{responsive:true,displaylogo:false});}}
"""
