"""The live page's own script: a new node drawn in the research DAG at once, before the DAG's next
build, and the figures redrawn after the nodes, each when it is on screen.

The server builds the DAG's figure on its own schedule, off the event path (`_drawing`): at 100k
events every few seconds. A node the page has (its list, its panel) that the figure it holds does
not draw is added to that figure where the page is: a marker one layer after the latest node it
links from (below that layer's last node), and its edges, all in one `Plotly.extendTraces` call
(one redraw). The DAG's next build, laid out with every node, replaces the figure; a build made
before a node came leaves it provisional again.

A delta's figures are drawn after its nodes, one figure per browser task, and a figure off screen
only when it scrolls into view (its newest build): at 100k events a browser redraws the DAG or the
lineage chart in a few hundred milliseconds each, and a delta that waited on a batch of them would
wait seconds. The script wraps the report page's `apply`
and `applyDelta` (`_report.PANEL_JS`), so the static report is unchanged."""

from __future__ import annotations

__all__ = ["LIVE_PAGE_JS"]

# Node ids and tasks are model output: escaped as `_dag` escapes them (Plotly reads a few tags).
LIVE_PAGE_JS = r"""
(function(){
 const esc=s=>String(s).replace(/&/g,'&amp;').replace(/</g,'&lt;').replace(/>/g,'&gt;').replace(/"/g,'&quot;').replace(/'/g,'&#x27;');
 const lo=a=>a.reduce((m,v)=>v<m?v:m,Infinity),hi=a=>a.reduce((m,v)=>v>m?v:m,-Infinity);
 function provisional(){
  const gd=document.getElementById('dag');if(!gd||!Array.isArray(gd.data))return 0;
  const at=name=>gd.data.findIndex(t=>typeof t.name==='string'&&t.name.startsWith(name));
  const idx={worker:at('workers'),reviewer:at('reviewers'),context:at('context'),scope:at('review scope')};
  const order=[idx.context,idx.scope,idx.worker,idx.reviewer];
  if(order.some(i=>i<0||!Array.isArray(gd.data[i].x)||!Array.isArray(gd.data[i].y)))return 0;
  const pos=new Map();
  for(const i of [idx.worker,idx.reviewer]){const t=gd.data[i];if(!Array.isArray(t.customdata))return 0;
   t.customdata.forEach((id,k)=>pos.set(id,[t.x[k],t.y[k]]));}
  const missing=NODES.filter(n=>!pos.has(n.id)).sort((a,b)=>a.seq-b.seq);
  if(!missing.length)return 0;
  const xs=[...new Set([...pos.values()].map(p=>p[0]))].sort((a,b)=>a-b);
  const step=xs.length>1?xs[1]-xs[0]:1;
  const keys=['x','y','customdata','text','hovertext','marker.line.color'];
  const add=Object.fromEntries(keys.map(k=>[k,order.map(()=>[])]));
  const put=(i,vals)=>{const j=order.indexOf(i);for(const [k,v] of Object.entries(vals))add[k][j].push(...v);};
  for(const n of missing){
   const from=n.links.filter(l=>pos.has(l));
   let x=from.length?hi(from.map(l=>pos.get(l)[0]))+step:(xs.length?xs[0]:0);
   x=xs.find(v=>Math.abs(v-x)<step/2)??x;  // the layer's own x, when it has one
   const col=[...pos.values()].filter(p=>p[0]===x).map(p=>p[1]);
   const y=col.length?lo(col)-(col.length>1?(hi(col)-lo(col))/(col.length-1):0.2):0;
   pos.set(n.id,[x,y]);
   put(idx[n.kind],{x:[x],y:[y],customdata:[n.id],text:[esc(n.id)],
    hovertext:['<b>'+esc(n.id)+'</b> ('+n.kind+(n.done?'':', running')+'; placed until the next layout)<br>'+esc(n.task.slice(0,160))],
    'marker.line.color':[n.done?'#000':'#fff']});
   for(const l of from){const [lx,ly]=pos.get(l);put(n.kind==='worker'?idx.context:idx.scope,{x:[lx,x,null],y:[ly,y,null]});}
  }
  // extendTraces extends arrays only: the edge traces get (empty) ones for what only markers carry.
  for(const i of order){const t=gd.data[i],len=t.x.length;
   for(const k of ['customdata','text','hovertext'])if(!Array.isArray(t[k]))t[k]=Array(len).fill(null);
   if(!Array.isArray(t.marker?.line?.color))t.marker={...t.marker,line:{...t.marker?.line,color:Array(len).fill(null)}};}
  Plotly.extendTraces(gd,add,order);
  return missing.length;
 }
 // A delta's figures are drawn after its nodes, one per task, the newest build of each: the DAG
 // first, then each other figure once it is on screen (or near it), as it scrolls into view.
 const queued=new Map(),near=new Set();let timer=null;
 const ready=()=>[...queued.keys()].find(k=>k==='dag'||near.has(k));
 const soon=()=>{if(timer===null&&ready()!==undefined)timer=setTimeout(drawNext,0);};
 function drawNext(){timer=null;const id=queued.has('dag')?'dag':ready();if(id===undefined)return;
  const f=queued.get(id);queued.delete(id);drawFigures({[id]:f});if(id==='dag')provisional();soon();}
 const io=new IntersectionObserver(es=>{for(const e of es)e.isIntersecting?near.add(e.target.id):near.delete(e.target.id);soon();},
  {rootMargin:'300px'});
 for(const d of document.querySelectorAll('.fig'))io.observe(d);
 const apply0=apply,delta0=applyDelta;
 apply=function(P){queued.clear();apply0(P);provisional();};
 applyDelta=function(D){delta0({...D,figures:null});provisional();
  for(const [k,f] of Object.entries(D.figures||{}))queued.set(k,f);soon();};
 provisional();
})();
"""
