"""The page's inline stylesheet and script: nothing is fetched from the network."""

CSS = """
:root{--bg:#fff;--fg:#1b1f24;--mut:#5a6470;--line:#d5dae0;--card:#f6f8fa;--err:#c62828;--warn:#a86400;--info:#1565c0;--ok:#2e7d32;
--s0:#4e79a7;--s1:#f28e2b;--s2:#59a14f;--s3:#e15759;--s4:#76b7b2;--s5:#edc948;--s6:#b07aa1;--s7:#9c755f}
@media (prefers-color-scheme:dark){:root{--bg:#0f1317;--fg:#e6e9ed;--mut:#9aa5b1;--line:#2f3740;--card:#171c22;--err:#ef5350;--warn:#ffb74d;
--info:#64b5f6;--ok:#81c784;--s0:#6f9fd8;--s1:#ffa351;--s2:#7cc46f;--s3:#ff7b7d;--s4:#8fd6d0;--s5:#f5d766;--s6:#cf9cc2;--s7:#c09a84}}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:1200px;margin:0 auto;padding:16px}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;margin:1.4em 0 .5em;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
h3{font-size:1.05em;margin:1em 0 .4em}.mut{color:var(--mut)}code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em;overflow-wrap:anywhere}
.verdict{font-size:1.2em;font-weight:600;padding:10px 14px;border-radius:6px;background:var(--card);border-left:6px solid var(--ok)}
.verdict.failed,.verdict.error{border-left-color:var(--err)}.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}.sev-info{color:var(--info)}
.finding{border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0;background:var(--card)}
.finding .head{font-weight:600;color:var(--fg)}.finding p{margin:6px 0}.finding p,.finding summary,.finding li,p{overflow-wrap:anywhere}.finding dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}.finding dt{color:var(--mut)}.finding dd{margin:0;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px}.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px}
.card b{display:block;font-size:1.3em}.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}@media (max-width:800px){.grid2{grid-template-columns:1fr}}
.tw{overflow-x:auto;max-width:100%}table{border-collapse:collapse;width:100%;margin:4px 0}th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top;overflow-wrap:anywhere}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.n{white-space:nowrap;overflow-wrap:normal}th{overflow-wrap:normal;word-break:normal}th.sortable{cursor:pointer;user-select:none}th.sortable::after{content:" \\2195";color:var(--mut)}
th[aria-sort=ascending]::after{content:" \\2191"}th[aria-sort=descending]::after{content:" \\2193"}
details{margin:6px 0}summary{cursor:pointer;color:var(--mut)}section.trace{border-top:2px solid var(--line);margin-top:24px}
.fig{margin:8px 0;overflow-x:auto}svg.chart{width:100%;max-width:900px;height:auto;display:block;font-size:12px;overflow:hidden}svg .ink{fill:var(--fg)}svg .small{font-size:10px}svg .grid{stroke:var(--line)}
svg .s0{fill:var(--s0)}svg .s1{fill:var(--s1)}svg .s2{fill:var(--s2)}svg .s3{fill:var(--s3)}svg .s4{fill:var(--s4)}svg .s5{fill:var(--s5)}svg .s6{fill:var(--s6)}svg .s7{fill:var(--s7)}svg .roof{fill:none !important;stroke-width:2}svg .roof.s0{stroke:var(--s0)}svg .roof.s1{stroke:var(--s1)}
svg .area{fill-opacity:.55;stroke:var(--s0)}svg .box{fill:none;stroke:var(--mut)}svg .med{stroke:var(--fg);stroke-width:2}svg .dot{fill-opacity:.7}svg .busy{fill:var(--line)}svg .crit{stroke:var(--fg);stroke-width:.6}svg .link{stroke:var(--fg);stroke-width:.8;stroke-dasharray:2 2}
.nw{white-space:nowrap}.brk{overflow-wrap:normal}.rl{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:12px;align-items:start}@media (max-width:800px){.rl{grid-template-columns:minmax(0,1fr)}}.key{margin:8px 0;padding-left:2.2em;font-size:.92em}.key li{break-inside:avoid;overflow-wrap:anywhere}.group-where{font-size:.92em}.finding ul{margin:4px 0;padding-left:1.4em}.hook{border:1px dashed var(--line);padding:8px;border-radius:6px;color:var(--mut)}
@media (max-width:480px){main{padding:6px}body{font-size:13px}th,td{padding:2px 3px}table{font-size:.88em}td.n{white-space:normal}}
"""

# Sorts a table when a header with class "sortable" is clicked: numbers by data-v, text otherwise.
JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th.sortable').forEach(function(th,i){
    th.tabIndex=0;
    function go(){
      var dir=th.getAttribute('aria-sort')==='descending'?'ascending':'descending';
      t.querySelectorAll('th').forEach(function(o){o.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',dir);
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var idx=th.cellIndex;
      rows.sort(function(a,b){
        var x=a.cells[idx],y=b.cells[idx];
        var xv=x.getAttribute('data-v'),yv=y.getAttribute('data-v');
        var r=(xv!==null&&yv!==null)?(parseFloat(xv)-parseFloat(yv)):x.textContent.localeCompare(y.textContent);
        return dir==='ascending'?r:-r;
      });
      rows.forEach(function(r){body.appendChild(r);});
    }
    th.addEventListener('click',go);
    th.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();go();}});
  });
});
"""
