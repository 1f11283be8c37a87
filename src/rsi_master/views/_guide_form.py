"""The live view's one write: the guidance form, which records a `human.guidance` event as
`rsi-master guide` does (`orchestra.guide_run`, as the OS user the server runs as).

Only the operator can post it. The server's token is checked first, as for every request, on
loopback too (an agent's shell can reach a loopback port). A page elsewhere cannot post it with the
operator's cookie: every form carries a per-server secret that only a page served here can read
(the same-origin policy), and a request whose Origin is not this server is refused. A refusal is
one line, nothing written.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..errors import RsiMasterError
from ..orchestra import guide_run
from ._html import esc

__all__ = ["FORM_MAX", "guide_endpoint", "guide_form"]

FORM_MAX = 16_384  # bytes of a posted form: a 4 kB text and its fields, with room for escaping

FIELDS = ("prefer", "avoid", "stop_worker")


def guide_form(csrf: str) -> str:
    """The form, placed at the end of a live run page; it posts to the page's `guide`."""
    inputs = "".join(
        f"<label>{name.replace('_', ' ')} <input name='{name}' placeholder='comma-separated'></label> "
        for name in FIELDS
    )
    return (
        "<section id='guidance'><h2>Guide the Main agent</h2>"
        "<form method='post' action='guide'>"
        f"<input type='hidden' name='csrf' value='{esc(csrf)}'>"
        "<textarea name='text' rows='3' cols='90' maxlength='4096' placeholder='guidance text'></textarea><br>"
        f"{inputs}<label>launches <select name='flow'><option value=''>as they are</option>"
        "<option value='pause'>pause</option><option value='resume'>resume</option></select></label> "
        "<button type='submit'>send guidance</button></form></section>"
    )


def _names(value: list[str]) -> list[str]:
    return [n.strip() for v in value for n in v.split(",") if n.strip()]


def guide_endpoint(
    call: Callable[..., Awaitable[object]], run_path: Callable[[str], object], key_dir: str | None, csrf: str
) -> Callable[[Request], Awaitable[Response]]:
    """The POST handler: `call` runs a function on the live view's worker thread, `run_path` maps a
    run name to its directory (None: no such run)."""

    def write(name: str, request: dict[str, object]) -> Response:
        path = run_path(name)
        if path is None:
            return PlainTextResponse(f"no run {name!r} here\n", status_code=404)
        try:
            guide_run(path, request, key_dir=key_dir)  # type: ignore[arg-type]
        except RsiMasterError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=400)
        return RedirectResponse("./", status_code=303)

    async def endpoint(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            return PlainTextResponse("guidance is taken from this server's own pages only\n", status_code=403)
        body = await request.body()
        if len(body) > FORM_MAX:
            return PlainTextResponse(f"guidance refused: a form of {len(body)} bytes; at most {FORM_MAX}\n", 413)
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        if not hmac.compare_digest((form.get("csrf") or [""])[0].encode(), csrf.encode()):
            return PlainTextResponse("guidance is taken from this server's own pages only\n", status_code=403)
        req: dict[str, object] = {"text": (form.get("text") or [""])[0]}
        req.update({name: _names(form.get(name, [])) for name in FIELDS})
        flow = (form.get("flow") or [""])[0]
        if flow:
            req["flow"] = flow
        response = await call(write, request.path_params["name"], req)
        assert isinstance(response, Response)
        return response

    return endpoint
