// Helpers shared by the run and compare pages (experiment/html_report.py embeds them).
const DATA = JSON.parse(document.getElementById('report-data').textContent);
const main = document.getElementById('report');
const CONFIG = {displaylogo: false, responsive: true};
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'class') node.className = v; else node.setAttribute(k, v); }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}
function section(id, title, note) {
  const s = el('section', {id: id}, el('h2', {}, title));
  if (note) s.append(el('p', {class: 'note'}, note));
  main.append(s);
  return s;
}
function chart(parent, id, traces, layout) {
  const div = el('div', {id: id, class: 'chart'});
  parent.append(div);
  Plotly.newPlot(div, traces, Object.assign({margin: {t: 30, r: 20, b: 45, l: 60}, legend: {orientation: 'h'}}, layout), CONFIG);
  return div;
}
function table(parent, id, headers, rows, sortable) {
  const head = el('tr', {});
  headers.forEach((h, i) => {
    const th = el('th', sortable ? {class: 'sortable', 'data-column': i} : {}, h);
    head.append(th);
  });
  const body = el('tbody', {});
  for (const row of rows) {
    const tr = el('tr', row.class ? {class: row.class} : {});
    for (const cell of row.cells) tr.append(el('td', {}, cell === null || cell === undefined ? '–' : cell));
    body.append(tr);
  }
  const t = el('table', {id: id}, el('thead', {}, head), body);
  if (sortable) {
    head.querySelectorAll('th').forEach(th => th.addEventListener('click', () => {
      const column = Number(th.dataset.column), up = th.dataset.order !== 'asc';
      th.dataset.order = up ? 'asc' : 'desc';
      const value = tr => { const text = tr.children[column].textContent; const n = Number(text); return text !== '' && !isNaN(n) ? n : text; };
      const sorted = Array.from(body.children).sort((a, b) => { const x = value(a), y = value(b); return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); });
      body.append(...sorted);
    }));
  }
  parent.append(el('div', {class: 'scroll'}, t));
  return t;
}
