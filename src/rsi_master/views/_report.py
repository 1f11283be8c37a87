"""One run's report page: problems first, the summary and verify result, the research DAG with a
panel for the selected node, the Main's decisions, the charts, the audit and the selected
checkpoint's lineage. Every text an agent wrote is escaped (model output is hostile)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

import plotly.graph_objects as go

from ._dag import dag_figure
from ._figures import audit_figure, best_figure, budget_unit, gantt_figure, lineage_figure, tool_mix_figure
from ._html import DRAW_JS, UNPACK_JS, Page, esc, figure_data, json_block, pack, table
from ._model import DecisionView, RunView

__all__ = [
    "FIGURES",
    "decision_row",
    "packed_nodes",
    "report_figures",
    "report_html",
    "report_payload",
    "report_sections",
]

# Text longer than this is folded into a <details> element.
_FOLD = 400

SUMMARY_KEYS = (
    "final_score",
    "base_score",
    "reference_score",
    "selected",
    "selected_review_score",
    "hacking_rate",
    "interception_rate",
    "experiments",
    "workers",
    "reviews",
    "decisions",
    "slot_utilisation",
    "llm_tokens",
    "llm_cost_usd",
)

# Renders the selected node's record from the embedded JSON with DOM calls only (textContent:
# nothing an agent wrote is ever parsed as HTML).
PANEL_JS = r"""
let NODES=[],DECISIONS=[],byId={},SELECTED='';
function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=String(text);if(cls)e.className=cls;return e;}
function fold(text){const t=String(text??'');if(t.length<=FOLD)return el('pre',t);const d=el('details');d.append(el('summary',t.slice(0,120)+'… ('+t.length+' characters)'),el('pre',t));return d;}
function list(title,items){const d=el('div');if(!items||!items.length)return d;d.append(el('h4',title));const u=el('ul');for(const i of items)u.append(el('li',i));d.append(u);return d;}
function fmt(v){return v===null||v===undefined?'—':(typeof v==='number'?v.toFixed(3):String(v));}
async function show(id){
 let n=byId[id];const p=document.getElementById('panel');if(!n)return;
 SELECTED=id;document.getElementById('node-select').value=id;
 if(n.packed!==undefined){p.replaceChildren(el('p','reading '+id+'…','muted'));
  try{const full=await unpack(n.packed);if(byId[id]===n){byId[id]=full;NODES[NODES.indexOf(n)]=full;}n=full;}
  catch(e){p.replaceChildren(el('p','cannot read the panel of '+id+': '+e,'bad'));return;}
  if(SELECTED!==id)return;}
 p.replaceChildren();
 p.append(el('h3',n.id+' ('+n.kind+(n.done?'':', running')+')'));
 p.append(el('h4',n.kind==='worker'?'Task':'Question'),fold(n.task));
 if(n.kind==='worker'){p.append(el('h4','Direction'),fold(JSON.stringify(n.direction,null,1)));}
 p.append(el('p',(n.kind==='worker'?'Predecessors: ':'Scope: ')+(n.links.join(', ')||'none')));
 if(n.summary){p.append(el('h4','Summary'),fold(n.summary));}
 if(n.candidates.length)p.append(el('p','Candidates: '+n.candidates.join(', ')));
 const ds=DECISIONS.filter(d=>d.nodes.includes(n.id));
 if(ds.length){p.append(el('h4','Main decisions naming it'));const u=el('ul');for(const d of ds){u.append(el('li','event '+d.seq+' '+d.action+': '+d.rationale+' [evidence '+d.evidence.join(', ')+']'));}p.append(u);}
 if(n.experiments.length){
  p.append(el('h4','Experiments'));const t=el('table');t.className='exps';const h=el('tr');
  for(const c of ['id','status','method','parent','steps','dev','review','checkpoint'])h.append(el('th',c));t.append(h);
  for(const x of n.experiments){const r=el('tr');const ev=s=>{const e=x.evals.find(e=>e.split===s);return e?e.score:null;};
   for(const c of [x.id,x.status,x.method,x.parent,x.steps,fmt(ev('dev')),fmt(ev('review')),x.checkpoint?x.checkpoint.slice(0,16):'—'])r.append(el('td',c));
   r.title=x.checkpoint||'';t.append(r);
   const rr=el('tr');const td=el('td');td.colSpan=8;const d=el('details');d.append(el('summary','recipe of '+x.id+(x.error?' (error: '+x.error+')':'')),el('pre',JSON.stringify(x.recipe,null,1)));td.append(d);rr.append(td);t.append(rr);}
  p.append(t);}
 if(n.review){const r=n.review;p.append(el('h4','Review (event '+r.seq+'): verdict '+r.verdict));
  p.append(list('Supported',r.supported),list('Uncertainties',r.uncertainties),list('Violations',r.violations),
   list('Regressions',r.regressions),list('Missing comparisons',r.missing_comparisons),list('Recommendations',r.recommendations));
  p.append(el('p','Evidence: events '+r.evidence.join(', ')));}
 if(n.transcript.length){p.append(el('h4','Transcript ('+n.transcript.length+' turns)'));p.append(transcript(n.transcript));}
}
function transcript(steps){const box=el('div');for(const s of steps){const d=el('details');
 d.append(el('summary','event '+s.seq+' · '+s.episode+' #'+s.index+' · '+s.tool_calls.length+' tool calls · '+s.tokens+' tokens'));
 if(s.content)d.append(fold(s.content));
 for(const c of s.tool_calls){d.append(el('div',c.name+' → '+c.status+(c.error?' ('+c.error+')':''),'mono'));d.append(fold(c.arguments));}
 box.append(d);}return box;}
const FOLD=400;
// Sections are HTML the server built with every value escaped; figures are redrawn in place.
function apply(P){
 for(const [k,h] of Object.entries(P.sections)){const s=document.getElementById('sec-'+k);if(s)s.innerHTML=h;}
 drawFigures(P.figures);
 NODES=P.nodes;DECISIONS=P.decisions;byId=Object.fromEntries(NODES.map(n=>[n.id,n]));
 const sel=document.getElementById('node-select');sel.replaceChildren(el('option','choose…'));sel.firstChild.value='';
 for(const n of NODES){const o=el('option',n.id+' ('+n.kind+')');o.value=n.id;sel.append(o);}
 const mt=document.getElementById('main-transcript');mt.replaceChildren();
 if(P.main_steps.length){mt.append(el('h3','Main agent transcript ('+P.main_steps.length+' turns)'),transcript(P.main_steps));}
 if(SELECTED)show(SELECTED);
}
// A live page's delta: the sections and figures redrawn, the nodes, decisions and Main turns
// that changed or came since the page's last look put in place of (or after) the ones it holds.
function applyDelta(D){
 for(const [k,h] of Object.entries(D.sections)){const s=document.getElementById('sec-'+k);if(s)s.innerHTML=h;}
 if(D.figures)drawFigures(D.figures);
 const sel=document.getElementById('node-select');
 for(const n of D.nodes){const old=byId[n.id];
  if(old){NODES[NODES.indexOf(old)]=n;}else{NODES.push(n);const o=el('option',n.id+' ('+n.kind+')');o.value=n.id;sel.append(o);}
  byId[n.id]=n;}
 for(const d of D.decisions){const i=DECISIONS.findIndex(x=>x.seq===d.seq);if(i<0)DECISIONS.push(d);else DECISIONS[i]=d;}
 const tb=document.querySelector('#sec-decisions tbody');
 if(tb)for(const [seq,h] of Object.entries(D.decision_rows)){const t=document.createElement('template');t.innerHTML=h.trim();
  const row=t.content.firstChild;const old=tb.querySelector('tr[data-seq="'+seq+'"]');if(old)old.replaceWith(row);else tb.append(row);}
 if(D.main_steps.length){const mt=document.getElementById('main-transcript');
  if(!mt.firstChild)mt.append(el('h3',''),el('div'));
  mt.lastChild.append(...transcript(D.main_steps).children);
  mt.firstChild.textContent='Main agent transcript ('+mt.lastChild.children.length+' turns)';}
 if(SELECTED&&D.nodes.some(n=>n.id===SELECTED))show(SELECTED);
}
document.getElementById('node-select').addEventListener('change',e=>show(e.target.value));
apply(JSON.parse(document.getElementById('payload').textContent));
document.getElementById('dag').on('plotly_click',ev=>{const pt=ev.points&&ev.points[0];if(pt&&pt.customdata)show(pt.customdata);});
"""

# A live page: the server says when the run's ledger grew (or its figures were redrawn); the page
# asks for what changed since the size it has seen (the whole payload when the server cannot say,
# as after its restart). EventSource reconnects by itself, so the page outlives the server.
LIVE_JS = r"""
(function(){const es=new EventSource(EVENTS_URL);let busy=false,again=false;
 const P0=JSON.parse(document.getElementById('payload').textContent);let size=P0.size??null,figs=P0.figs??null;
 async function pull(){if(busy){again=true;return;}busy=true;
  try{const q=size===null?'':'?since='+size+'&figs='+encodeURIComponent(figs);
   const r=await fetch('data.json'+q,{cache:'no-store',credentials:'same-origin'});
   if(r.ok){const D=await r.json();if(D.full)apply(D);else applyDelta(D);size=D.size;figs=D.figs;document.body.dataset.size=D.size;}}
  finally{busy=false;if(again){again=false;pull();}}}
 es.onmessage=e=>{pull();};})();
"""


def _num(v: object) -> object:
    return round(v, 4) if isinstance(v, float) else ("n/a" if v is None else v)


def _problems(view: RunView) -> str:
    if not view.problems:
        return ""
    items = "".join(f"<li>{esc(p)}</li>" for p in view.problems[:50])
    more = f"<li>… {len(view.problems) - 50} more</li>" if len(view.problems) > 50 else ""
    return (
        f"<section class='problems' id='problems'><h2>This run does not verify: {len(view.problems)} problems</h2>"
        f"<ul>{items}{more}</ul><p>Everything below is read from a record that failed these checks.</p></section>"
    )


def _summary(view: RunView) -> str:
    unit, div = budget_unit(view.budget_s)
    rows: list[tuple[str, object]] = [
        ("run", view.run_id),
        ("task", view.task),
        ("backend", view.backend),
        ("base model", view.base_model),
        ("agents", ", ".join(f"{k}={v}" for k, v in view.agents.items()) or None),
        ("budget", f"{view.budget_s / div:.2f} {unit}" if view.budget_s else None),
        ("spent", f"{view.spent_s / div:.2f} {unit}" if view.spent_s is not None else None),
        ("slots", view.slots),
        ("finished", "yes" if view.finished else "no (running, interrupted or never driven)"),
    ]
    rows += [(k, _num(view.summary[k])) for k in SUMMARY_KEYS if k in view.summary]
    v = view.verify
    verify = (
        "<p>not verified</p>"
        if v is None
        else (
            f"<p id='verify'><span class='{'ok' if v.ok else 'bad'}'>{'VERIFIED' if v.ok else 'FAILED'}</span>: "
            f"{v.events} events, {v.checkpoints} signed checkpoints, {v.artifacts} artifacts"
            f"{f', {v.unsigned_tail} events after the last kept checkpoint' if v.unsigned_tail else ''}.<br>"
            f"signed root <code id='root'>{esc(v.root)}</code><br>head <code>{esc(v.head)}</code><br>"
            f"witness <code>{esc(v.witness)}</code></p>"
            + "".join(f"<p class='muted'>note: {esc(n)}</p>" for n in v.notes)
        )
    )
    if view.checked_at is not None and view.size is not None and view.checked_at < view.size:
        verify += (
            f"<p id='checked-at' class='muted'>verify and the audit below cover the first {view.checked_at} of "
            f"{view.size} events: the live view re-runs them when the run finishes and at most every "
            "minute while it grows, never per event (each new event's hash chain is checked as it is read).</p>"
        )
    return (
        "<section id='summary'><h2>Summary</h2>"
        + table(("", ""), ((k, "n/a" if val is None else val) for k, val in rows))
        + f"<h2>Verify</h2>{verify}<p id='trust'><b>Trust boundary:</b> {esc(view.trust_boundary)}</p>"
        "<p class='muted'>This page is a view written from the run's ledger; regenerate it with "
        f"<code>rsi-master report {esc(view.run_dir)}</code> to check it.</p></section>"
    )


def decision_row(d: DecisionView, budget_s: float | None) -> str:
    """One row of the decisions table, marked with its event (a live page replaces it by that)."""
    _unit, div = budget_unit(budget_s)
    cells = (d.seq, f"{d.at_s / div:.2f}", d.action, ", ".join(d.nodes), d.rationale, ", ".join(map(str, d.evidence)))
    row = table((), [cells]).split("<tbody>", 1)[1].rsplit("</tbody>", 1)[0]
    return row.replace("<tr>", f"<tr data-seq='{d.seq}'>", 1)


def _decisions(view: RunView) -> str:
    unit, _div = budget_unit(view.budget_s)
    head = "".join(
        f"<th>{esc(h)}</th>" for h in ("event", f"at ({unit})", "action", "nodes", "rationale", "evidence (events)")
    )
    rows = "".join(decision_row(d, view.budget_s) for d in view.decisions)
    return f"<h2>Main decisions</h2><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _audit(view: RunView) -> str:
    a = view.audit
    if a is None:
        return "<h2>Audit</h2><p class='bad'>The audit could not be computed.</p>"
    rate = "n/a" if a.interception_rate is None else f"{a.interception_rate:.3f}"
    out = (
        f"<h2>Audit</h2><p id='rates'>{a.submissions} submissions · hacking rate <b>{a.hacking_rate:.3f}</b> · "
        f"interception rate <b>{rate}</b> · {a.blocked_attempts} blocked attempts · "
        f"{a.executed_violations} executed violations · flagged: {esc(', '.join(a.flagged) or 'none')}</p>"
    )
    if a.blocked:
        out += "<h3>Blocked attempts</h3>" + table(
            ("event", "actor", "tool", "subcategory", "reason"),
            ((b.seq, b.actor, b.tool, b.subcategory, b.reason) for b in a.blocked[:500]),
        )
        if len(a.blocked) > 500:
            out += f"<p>… {len(a.blocked) - 500} more blocked attempts (rsi-master audit RUN_DIR lists them)</p>"
    if a.run_dir_issues:
        out += (
            "<h3 class='bad'>Run directory issues</h3><ul>"
            + "".join(f"<li>{esc(i)}</li>" for i in a.run_dir_issues)
            + "</ul>"
        )
    return out


def _lineage(view: RunView) -> str:
    if not view.selected:
        return "<h2>Selected checkpoint</h2><p>No checkpoint selected (the run has not finished).</p>"
    rows = [
        (
            x.id,
            x.owner,
            x.status,
            x.method,
            x.steps,
            _num(x.score("dev")),
            _num(x.score("review")),
            x.checkpoint,
            x.parent,
        )
        for x in view.selected_lineage
    ]
    return (
        f"<h2>Lineage of the selected checkpoint ({esc(view.selected)})</h2>"
        + table(("experiment", "by", "status", "method", "steps", "dev", "review", "checkpoint", "from"), rows)
        + f"<p>base model <code>{esc(view.base_model)}</code></p>"
    )


def dag_title(workers: int, reviewers: int, edges: int) -> str:
    return f"<h2>Research DAG: {workers} Workers, {reviewers} Reviewers, {edges} edges</h2>"


FIGURES: dict[str, Callable[[RunView], go.Figure]] = {
    "dag": dag_figure,
    "best": best_figure,
    "lineages": lineage_figure,
    "gantt": gantt_figure,
    "toolmix": tool_mix_figure,
    "audit": audit_figure,
}


def report_figures(view: RunView) -> dict[str, object]:
    """The page's figures, as Plotly JSON."""
    return {k: figure_data(build(view)) for k, build in FIGURES.items()}


def report_sections(view: RunView, *, checks: bool = True) -> dict[str, str]:
    """The page's HTML sections (every value escaped) that do not grow with the run: the problems,
    the summary and, with `checks`, the audit and the selected lineage."""
    out = {"problems": _problems(view), "summary": _summary(view)}
    if checks:
        out |= {"auditsec": _audit(view), "lineage": _lineage(view)}
    return out


def report_payload(view: RunView, figures: Mapping[str, object] | None = None) -> dict[str, object]:
    """What the page shows, as the JSON its script renders: sections (HTML built here, every
    value escaped), figures (`figures` when given, built from `view` otherwise), nodes, decisions
    and the Main's transcript. A live page fetches it anew after a restart, and deltas after."""
    workers = sum(n.kind == "worker" for n in view.nodes)
    return {
        "sections": {
            **report_sections(view),
            "dagtitle": dag_title(workers, len(view.nodes) - workers, len(view.edges)),
            "decisions": _decisions(view),
        },
        "figures": figures if figures is not None else report_figures(view),
        "nodes": [n.model_dump(mode="json") for n in view.nodes],
        "decisions": [d.model_dump(mode="json") for d in view.decisions],
        "main_steps": [s.model_dump(mode="json") for s in view.main_transcript],
    }


def _sec(name: str) -> str:
    return f"<div id='sec-{name}'></div>"


def _fig(name: str) -> str:
    return f"<div id='{name}' class='fig'></div>"


def packed_nodes(nodes: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each node's panel packed on its own (`_html.pack`): the page holds every panel, and parses
    and inflates only the one selected (a 100k-event campaign's panels are 16 MB of JSON, 2.7 MB
    packed). The id and kind stay plain, for the node list."""
    return [{"id": n["id"], "kind": n["kind"], "packed": pack(n)} for n in nodes]


def report_html(view: RunView, *, live: str | None = None, data: dict[str, object] | None = None) -> str:
    """The report page; with `live` (the URL of the run's event stream), a page that redraws
    what changed whenever the run's ledger grows. `data`: the page's data, when a caller has it."""
    page = Page(f"RSI-Master report: {view.run_id or view.run_dir}", live=live is not None)
    page.add(f"<h1>RSI-Master run {esc(view.run_id)}</h1><p class='muted mono'>{esc(view.run_dir)}</p>")
    page.add(_sec("problems") + _sec("summary") + _sec("dagtitle"))
    page.add(
        "<div class='row'><div>"
        + _fig("dag")
        + "</div><div><label>Node <select id='node-select'></select></label>"
        + "<div id='panel'><p class='muted'>Click a node of the DAG, or choose one.</p></div></div></div>"
    )
    page.add(_sec("decisions") + "<div id='main-transcript'></div>")
    page.add("<h2>Scores and budget</h2><div class='row'><div>" + _fig("best") + "</div><div>")
    page.add(_fig("lineages") + "</div></div><div class='row'><div>" + _fig("gantt") + "</div><div>")
    page.add(_fig("toolmix") + "</div></div>" + _sec("auditsec") + _fig("audit") + _sec("lineage"))
    content = data if data is not None else report_payload(view)
    if live is None:  # a live page keeps its nodes plain: its deltas replace them one by one
        nodes = content["nodes"]
        assert isinstance(nodes, list)
        content = {**content, "nodes": packed_nodes(nodes)}
    page.data.append(json_block("payload", content))
    page.scripts.append(DRAW_JS + UNPACK_JS + PANEL_JS)
    if live is not None:
        page.scripts.append(LIVE_JS.replace("EVENTS_URL", json.dumps(live)))
    return page.render()
