// report.html of `globaltables compare`: the modes side by side.
const doc = DATA.compare;
main.append(el('h1', {}, 'globaltables compare: ' + doc.topology));
const modes = Object.entries(doc.modes);
const overview = section('summary', 'Modes', `Seed ${doc.seed}; chaos: ${doc.chaos || 'none'}. Each mode's own report: its report.html.`);
table(overview, 'modes-table', ['mode', 'ran', 'checks', 'lost writes', 'LWW overwrites', 'RWCE answers', 'report'],
      modes.map(([mode, s]) => ({class: s.ran && s.passed ? '' : 'lost', cells: [mode, s.ran ? 'yes' : 'no: ' + s.reason, s.ran ? (s.passed ? 'passed' : 'FAILED') : '–',
                                 s.ran && s.lost_writes ? s.lost_writes.count : '–', s.ran ? s.conflicts.lww_overwrites : '–', s.ran ? s.conflicts.replicated_write_conflicts : '–', s.ran ? mode + '/report.html' : '–']})));
overview.querySelectorAll('#modes-table td:last-child').forEach(td => { if (td.textContent.endsWith('.html')) { const a = el('a', {href: td.textContent}, td.textContent); td.replaceChildren(a); } });
const ran = modes.filter(([, s]) => s.ran);
const regions = [...new Set(ran.flatMap(([, s]) => Object.keys(s.writes_ms)))].sort();
const writes = section('writes', 'Write latency per region and mode (ms)', 'Bars: p50 and p99 of each mode\'s writes; outlined bars: the MRSC floor, one round trip to the nearest other member.');
const traces = [];
for (const [mode, s] of ran) {
  const pick = g => { const ops = s.writes_ms[g] || {}; return ops.put || Object.values(ops)[0] || {}; };
  traces.push({x: regions, y: regions.map(g => pick(g).p50), name: mode + ' write p50', type: 'bar'});
  traces.push({x: regions, y: regions.map(g => pick(g).p99), name: mode + ' write p99', type: 'bar'});
  // The floor as an outlined bar right beside the mode's own bars: each MRSC write latency next to its floor.
  if (s.write_floor_ms) traces.push({x: regions, y: regions.map(g => s.write_floor_ms[g]), name: 'MRSC floor', type: 'bar', marker: {color: 'rgba(0,0,0,0)', line: {color: 'black', width: 2}}});
}
chart(writes, 'chart-compare-writes', traces, {barmode: 'group', yaxis: {title: {text: 'ms'}}});
const reads = section('reads', 'Read latency per region and mode (ms, p50)');
const readTraces = [];
for (const [mode, s] of ran) for (const op of [...new Set(Object.values(s.reads_ms).flatMap(o => Object.keys(o)))]) readTraces.push({x: regions, y: regions.map(g => ((s.reads_ms[g] || {})[op] || {}).p50), name: `${mode} ${op}`, type: 'bar'});
chart(reads, 'chart-compare-reads', readTraces, {barmode: 'group', yaxis: {title: {text: 'ms'}}});
chart(section('costs', 'What each mode cost: conflicts and lost writes'), 'chart-compare-costs', [
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => s.conflicts.lww_overwrites), name: 'LWW overwrites', type: 'bar'},
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => (s.lost_writes || {}).count || 0), name: 'lost writes (ledger)', type: 'bar'},
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => s.conflicts.replicated_write_conflicts), name: 'RWCE answers', type: 'bar'}], {barmode: 'group'});
const lagLinks = [...new Set(ran.flatMap(([, s]) => Object.keys(s.replication_lag_ms || {})))].sort();
chart(section('lag', 'Replication lag p50 per link and mode (ms)'), 'chart-compare-lag', ran.map(([mode, s]) => ({x: lagLinks, y: lagLinks.map(l => ((s.replication_lag_ms || {})[l] || {}).p50), name: mode, type: 'bar'})), {barmode: 'group'});
document.body.dataset.ready = 'true';
