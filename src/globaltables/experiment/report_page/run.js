// report.html of one run: draws DATA (html_report.run_data) with plotly.
const W = DATA.windows || [];
const COLORS = ['rgba(255,165,0,0.22)', 'rgba(100,149,237,0.22)', 'rgba(60,179,113,0.22)', 'rgba(238,130,238,0.22)'];
function shaded(extra) {
  const shapes = W.map((w, i) => ({type: 'rect', xref: 'x', yref: 'paper', x0: w.start, x1: w.end, y0: 0, y1: 1,
                                   fillcolor: COLORS[i % COLORS.length], line: {width: 0}, layer: 'below'}));
  return Object.assign({shapes: shapes, xaxis: {title: {text: 'seconds since measurement start'}, range: DATA.range}}, extra || {});
}
function lines(series, field, name) {
  return Object.entries(series).map(([region, s]) => ({x: s.t, y: s[field], name: name ? name(region) : region, mode: 'lines+markers', marker: {size: 4}}));
}
if (DATA.error) {
  main.append(el('h1', {}, DATA.title), el('p', {class: 'fail'}, 'The report could not be drawn: ' + DATA.error));
} else {
  const r = DATA.results;
  const passed = r.checks.every(c => c.passed);
  main.append(el('h1', {}, 'globaltables: ' + DATA.title + ' — ', el('span', {class: passed ? 'pass' : 'fail'}, passed ? 'all checks passed' : 'CHECKS FAILED')));
  const summary = section('summary', 'Summary', `Seed ${r.seed}, started ${r.started_at}, ${r.duration_s.toFixed(1)} s measured; chaos: ${r.chaos || 'none'}; write mode: ${(r.workload || {}).write_mode || 'any'}.`);
  table(summary, 'checks', ['check', 'verdict', 'detail'], r.checks.map(c => ({class: c.passed ? '' : 'lost', cells: [c.name, c.passed ? 'PASS' : 'FAIL', c.detail]})));
  const lw = r.lost_writes || {};
  summary.append(el('p', {}, `Conflicts: ${r.conflicts.replicated_write_conflicts} ReplicatedWriteConflictException answers; ${r.conflicts.lww_overwrites} of ${r.conflicts.replicated_records} replicated records lost last-writer-wins; the ledger holds ${lw.count || 0} discarded acknowledged writes (${lw.writes || 0} distinct; causes: ${JSON.stringify(lw.by_cause || {})}).`));

  const faults = section('faults', 'Fault timeline', W.length ? 'Each fault window; the same windows are shaded on every time chart below.' : 'No fault windows in this run.');
  const labels = [...new Set(W.map(w => w.label))];
  chart(faults, 'chart-faults', W.map((w, i) => ({x: [w.end - w.start], base: [w.start], y: [w.label], type: 'bar', orientation: 'h', name: w.label, marker: {color: COLORS[i % COLORS.length].replace('0.22', '0.8')}, showlegend: false})),
        shaded({height: Math.max(160, 60 + 30 * labels.length), yaxis: {automargin: true}, barmode: 'overlay'}));

  chart(section('throughput', 'Throughput per region (answered operations per second)', `In ${DATA.bucket_s} s buckets.`), 'chart-throughput', lines(DATA.throughput, 'ops'), shaded({yaxis: {title: {text: 'ops/s'}, rangemode: 'tozero'}}));
  const errorTraces = [];  // bars: one per bucket, stacked by region and error type
  for (const [region, kinds] of Object.entries(DATA.errors)) for (const [kind, s] of Object.entries(kinds)) errorTraces.push({x: s.t, y: s.n, width: DATA.bucket_s, name: `${region} ${kind}`, type: 'bar'});
  chart(section('errors', 'Errors by type per region (per second)', errorTraces.length ? '' : 'No errors.'), 'chart-errors', errorTraces, shaded({barmode: 'stack', yaxis: {title: {text: 'errors/s'}}}));
  const T = DATA.throttles || {series: {}, by_reason: {}};
  const throttleTraces = Object.entries(T.series).map(([reason, s]) => ({x: s.t, y: s.n, width: 1, name: reason, type: 'bar'}));
  const throttleText = throttleTraces.length ? `${T.attempts} throttled attempts by ThrottlingReasons reason; ${T.retries} SDK retries; ${T.operations_failed} operations ended throttled; ${T.replication_deferred} replication Ships deferred.` : `No throttles; ${T.replication_deferred || 0} replication Ships deferred.`;
  chart(section('throttles', 'Throttles by reason (per second)', throttleText), 'chart-throttles', throttleTraces, shaded({barmode: 'stack', yaxis: {title: {text: 'throttled attempts/s'}}}));
  const H = DATA.hottest || [];
  const hottest = section('hottest', 'Hottest keys (Contributor Insights)', H.length ? 'Per region and table: the partition keys that drew the most capacity units and met the most throttles.' : 'No keys counted (Contributor Insights off, or capacity not modelled).');
  if (H.length) table(hottest, 'hottest-table', ['region', 'table', 'rank', 'most accessed partition key', 'units', 'most throttled partition key', 'throttles'],
        H.map(h => ({cells: [h.region, h.table, h.rank, h.accessed ? h.accessed.key : '—', h.accessed ? h.accessed.units : '—', h.throttled ? h.throttled.key : '—', h.throttled ? h.throttled.throttles : '—']})), true);
  chart(section('latency', 'Latency percentiles per region (ms, answered operations, from intended start)'), 'chart-latency',
        [...lines(DATA.latency, 'p50', g => g + ' p50'), ...lines(DATA.latency, 'p99', g => g + ' p99')], shaded({yaxis: {title: {text: 'ms'}, type: 'log'}}));
  const lag = section('lag', 'Replication lag per link (ms, probe)');
  chart(lag, 'chart-lag', Object.entries(DATA.lag).map(([link, s]) => ({x: s.t, y: s.ms, name: link, mode: 'lines+markers', marker: {size: 4}})), shaded({yaxis: {title: {text: 'ms'}}}));
  const conv = section('convergence', 'Time to converge', 'After each heal: until every region had learnt of every write acknowledged before it (from the apply decisions); after the load: until every lane drained.');
  table(conv, 'convergence-table', ['after', 'at (s)', 'converged in (ms)', 'writes'],
        [...DATA.heals.map(h => ({cells: [h.after, h.t_s, h.ms, h.writes]})), ...r.convergence_ms.map(c => ({cells: [c.after, '', c.ms, '']}))]);
  const cdf = section('cdf', 'Latency CDFs (ms, log scale)');
  for (const [op, regions] of Object.entries(DATA.cdf)) {
    cdf.append(el('h3', {}, op));
    chart(cdf, 'chart-cdf-' + op, Object.entries(regions).map(([region, s]) => ({x: s.ms, y: s.p, name: region, mode: 'lines'})), {xaxis: {type: 'log', title: {text: 'ms'}}, yaxis: {title: {text: 'fraction'}, range: [0, 1]}});
  }
  chart(section('clocks', 'Clock offsets (ms added to each region\'s wall clock)'), 'chart-clocks', lines(DATA.clocks, 'ms').map(t => Object.assign(t, {mode: 'lines', line: {shape: 'hv'}})), shaded({yaxis: {title: {text: 'offset ms'}}}));

  const ledger = section('ledger', `Lost-write ledger (${DATA.ledger.length} entries)`, 'Every acknowledged write a region discarded because it held a newer version; click a header to sort.');
  table(ledger, 'ledger-table', ['table', 'key', 'value', 'origin', 'version', 'discarded in', 'at (s)', 'winner', 'winner origin', 'cause', 'first read (s)'],
        DATA.ledger.map(e => ({cells: [e.table, e.key, e.value, e.origin, e.version, e.region, e.discarded_s, e.winner.value, e.winner.origin, e.cause, e.first_read_s]})), true);

  const explorer = section('explorer', 'Key explorer', 'Pick a key: every acknowledged version written to it, by whom, which won, and when each region learnt of it.');
  const keys = Object.keys(DATA.keys);
  const select = el('select', {id: 'key-select'}, el('option', {value: ''}, keys.length ? `— ${keys.length} keys —` : 'no keys'));
  for (const key of keys) select.append(el('option', {value: key}, `${key} (${DATA.keys[key].length} versions)`));
  const shown = el('div', {id: 'key-versions'});
  explorer.append(select, shown);
  select.addEventListener('change', () => {
    shown.replaceChildren();
    const versions = DATA.keys[select.value];
    if (!versions) return;
    const regions = r.regions;
    table(shown, 'key-table', ['version', 'origin', 'op', 'value', 'sent (s)', 'acknowledged (s)', 'won', 'discarded by', ...regions.map(g => 'learnt in ' + g + ' (s)')],
          versions.map(v => ({class: v.won ? 'won' : (v.discarded_by.length ? 'lost' : ''), cells: [v.version, v.origin, v.f, v.value, v.invoked_s, v.acknowledged_s, v.won ? 'won' : '', v.discarded_by.join(', '), ...regions.map(g => v.learnt_s[g])]})));
    chart(shown, 'chart-key', regions.map(g => ({x: versions.map(v => v.learnt_s[g]), y: versions.map(v => v.value), name: 'learnt in ' + g, mode: 'markers', marker: {size: 8}})), shaded({yaxis: {type: 'category', automargin: true}}));
  });

  const violated = section('violations', 'Violating operations', DATA.violations.length ? 'The operations each failed checker names, as per-region lanes in time (a bar from invocation to completion).' : 'No checker failed.');
  DATA.violations.forEach((check, ci) => {
    violated.append(el('h3', {}, `${check.name}: ${check.detail}`));
    check.findings.slice(0, 10).forEach((finding, fi) => {
      violated.append(el('p', {}, `${finding.table}[${finding.key}] ${finding.problem}: ${finding.detail}`));
      const lanes = finding.lanes.filter(l => l.start !== null);
      // Zoomed to the operations (a few milliseconds each), the fault windows still shaded behind them.
      const times = lanes.flatMap(l => [l.start, l.end === null ? l.start : l.end]);
      const lo = Math.min(...times), hi = Math.max(...times), pad = Math.max(0.02, (hi - lo) * 0.15);
      chart(violated, `chart-violation-${ci}-${fi}`, lanes.map(l => ({x: [l.start, l.end === null ? l.start : l.end], y: [l.region, l.region], mode: 'lines+markers+text', name: l.label, line: {width: 8}, marker: {size: 10}, text: ['', l.label], textposition: 'top center', hovertext: l.label, hoverinfo: 'text+x'})),
            shaded({showlegend: false, yaxis: {type: 'category', categoryorder: 'array', categoryarray: r.regions, range: [-0.5, r.regions.length - 0.5], automargin: true}, height: 90 + 50 * r.regions.length,
                    xaxis: {title: {text: 'seconds since measurement start'}, range: lanes.length ? [lo - pad, hi + pad] : DATA.range}}));
    });
  });
}
document.body.dataset.ready = 'true';
