/* global document, window, EventSource, fetch */
/**
 * meshpilot's web console: one EventSource on /console/events (the server aggregates and sends at
 * most 4 updates a second; see console-hub.ts for the message shape), rendered with plain DOM.
 * Text from the server always goes through textContent, never innerHTML: config names, file names
 * and Envoy's errors are user input.
 */

const ROW_HEIGHT = 24;
/** Rows rendered beyond the visible ones, above and below. */
const OVERSCAN = 10;
const SVG = 'http://www.w3.org/2000/svg';

const state = {
  /** connection id → row */
  rows: new Map(),
  counts: { total: 0, byState: {}, byKind: {}, byNamespace: {} },
  changes: [],
  histogram: undefined,
  health: undefined,
  load: [],
  filtered: [],
};

const $ = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`console page: no element #${id}`);
  return el;
};

/** An element with a class and text (or children). */
function el(tag, cls, content) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (Array.isArray(content)) e.append(...content);
  else if (content !== undefined) e.textContent = String(content);
  return e;
}

function fmtBytes(n) {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

function fmtMs(ms) {
  if (ms === undefined || ms === null) return '–';
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

function fmtAge(at) {
  const s = Math.max(0, Math.round((Date.now() - at) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

// ---------------------------------------------------------------- proxies

function applyProxies(p) {
  if (p.rows) {
    state.rows = new Map(p.rows.map((r) => [r.id, r]));
  } else {
    for (const id of p.remove ?? []) state.rows.delete(id);
    for (const r of p.upsert ?? []) state.rows.set(r.id, r);
  }
  state.counts = p.counts;
  renderCounts();
  refreshFilterOptions();
  filterRows();
}

function renderCounts() {
  const c = state.counts;
  const box = $('proxy-counts');
  box.replaceChildren(
    el('span', 'count total', [el('b', '', c.total), ' proxies']),
    ...['SYNCED', 'STALE', 'NOT SENT', 'NACKED'].map((s) => {
      const chip = el('span', `count state-${s.replace(' ', '-')}`, [el('b', '', c.byState[s] ?? 0), ` ${s}`]);
      chip.dataset.state = s;
      return chip;
    }),
    ...Object.entries(c.byKind)
      .sort()
      .map(([k, n]) => el('span', 'count kind', [el('b', '', n), ` ${k}`])),
  );
}

function setOptions(select, values) {
  const current = select.value;
  const want = ['', ...values];
  const have = [...select.options].map((o) => o.value);
  if (want.length === have.length && want.every((v, i) => v === have[i])) return;
  select.replaceChildren(
    ...want.map((v) => {
      const o = el('option', '', v === '' ? 'all' : v);
      o.value = v;
      return o;
    }),
  );
  select.value = want.includes(current) ? current : '';
}

function refreshFilterOptions() {
  setOptions($('f-namespace'), Object.keys(state.counts.byNamespace).sort());
  setOptions($('f-kind'), Object.keys(state.counts.byKind).sort());
}

function filterRows() {
  const ns = $('f-namespace').value;
  const kind = $('f-kind').value;
  const st = $('f-state').value;
  const text = $('f-text').value.trim().toLowerCase();
  const out = [];
  for (const r of state.rows.values()) {
    if (ns && r.namespace !== ns) continue;
    if (kind && r.kind !== kind) continue;
    if (st && r.state !== st) continue;
    if (text && !r.proxy.toLowerCase().includes(text)) continue;
    out.push(r);
  }
  // Problems first, then by name: the rows that need a look are at the top.
  const rank = { NACKED: 0, STALE: 1, 'NOT SENT': 2, SYNCED: 3 };
  out.sort((a, b) => rank[a.state] - rank[b.state] || (a.proxy < b.proxy ? -1 : a.proxy > b.proxy ? 1 : 0));
  state.filtered = out;
  $('proxy-shown').textContent = `${out.length} of ${state.rows.size} shown`;
  $('proxy-spacer').style.height = `${out.length * ROW_HEIGHT}px`;
  renderVisibleRows();
}

/** Only the rows in view (plus OVERSCAN) are in the DOM: 2,000 proxies cost a few dozen elements. */
function renderVisibleRows() {
  const scroll = $('proxy-scroll');
  const first = Math.max(0, Math.floor(scroll.scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(state.filtered.length, Math.ceil((scroll.scrollTop + scroll.clientHeight) / ROW_HEIGHT) + OVERSCAN);
  const box = $('proxy-rows');
  box.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
  const rows = [];
  for (let i = first; i < last; i++) rows.push(proxyRowElement(state.filtered[i]));
  box.replaceChildren(...rows);
}

function proxyRowElement(r) {
  const types = el(
    'span',
    'types',
    Object.entries(r.types)
      .sort()
      .map(([t, s]) => {
        const b = el('span', `badge state-${s.replace(' ', '-')}`, t);
        b.title = `${t}: ${s}`;
        return b;
      }),
  );
  const stateCell = el('span', `state state-${r.state.replace(' ', '-')}`, r.state);
  if (r.nack) stateCell.title = r.nack;
  const row = el('div', 'proxy-row proxy-grid', [
    el('span', 'mono ellipsis', r.proxy),
    el('span', 'ellipsis', r.namespace),
    el('span', '', r.kind),
    stateCell,
    types,
    el('span', 'mono', r.istioVersion || '–'),
    el('span', 'muted', fmtAge(r.connectedAt)),
  ]);
  row.dataset.proxyId = r.proxy;
  row.dataset.state = r.state;
  row.title = r.nack ? `${r.proxy}\nNACK ${r.nack}` : r.proxy;
  return row;
}

// ---------------------------------------------------------------- changes

function renderChanges() {
  const list = $('change-list');
  if (state.changes.length === 0) {
    list.replaceChildren(el('li', 'muted', 'no config change since meshpilot started'));
    return;
  }
  list.replaceChildren(...state.changes.slice(0, 25).map(changeElement));
}

function changeElement(c) {
  const done = c.acked + c.nackedCount;
  const pct = c.proxies === 0 ? 100 : Math.round((done / c.proxies) * 100);
  const fill = el('span', `fill state-${c.state}`);
  fill.style.width = `${pct}%`;
  const label = el('span', 'bar-label', `${c.acked}/${c.proxies}`);
  const bar = el('span', 'bar', [fill, label]);
  bar.title = `${c.acked} ACKed, ${c.pending} pending, ${c.nackedCount} NACKed, ${c.disconnected} disconnected`;
  const reasons = Object.keys(c.reasons).join(', ');
  const configs =
    c.configs.length === 0
      ? [el('li', 'muted', c.full ? 'everything (full push)' : 'endpoints')]
      : c.configs.map((k) => el('li', '', [el('span', 'mono', k.key), el('span', 'muted', ` ${k.source}`)]));
  if (c.configCount > c.configs.length) configs.push(el('li', 'muted', `… ${c.configCount - c.configs.length} more`));
  const push = !c.push
    ? 'push volume not recorded (no console was open)'
    : c.push.responses === 0
      ? 'nothing sent: every proxy held this config already'
      : `${c.push.types.join(' ')} · ${c.push.responses} responses · ${fmtBytes(c.push.bytes)}`;
  const head = el('div', 'change-head', [
    el('b', '', `#${c.id}`),
    el('span', 'muted', ` ${new Date(c.startedAt).toLocaleTimeString()} · ${reasons}${c.full ? ' · full' : ' · EDS'} · `),
    el('span', `state state-${c.state}`, c.state),
    el('span', 'muted', c.convergenceMs !== undefined ? ` · converged in ${fmtMs(c.convergenceMs)}` : ''),
  ]);
  const item = el('li', 'change', [head, bar, el('ul', 'configs', configs), el('div', 'muted small', `${c.proxies} proxies · ${push}`)]);
  for (const n of c.nacked) item.append(el('div', 'nack small', `NACK ${n.type} from ${n.proxy}: ${n.message}`));
  item.dataset.changeId = String(c.id);
  item.dataset.state = c.state;
  item.dataset.acked = String(c.acked);
  item.dataset.proxies = String(c.proxies);
  item.dataset.configs = c.configs.map((k) => k.key).join(' ');
  if (c.push) item.dataset.bytes = String(c.push.bytes);
  return item;
}

function renderHistogram() {
  const h = state.histogram;
  const box = $('histogram');
  if (!h) return;
  if (h.count === 0) {
    box.replaceChildren(el('div', 'muted small', 'convergence, last hour: no change has finished'));
    return;
  }
  const max = Math.max(1, ...h.buckets.map((b) => b.count));
  const w = 320;
  const hgt = 70;
  const bw = w / h.buckets.length;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${hgt + 14}`);
  svg.setAttribute('class', 'chart');
  h.buckets.forEach((b, i) => {
    const bh = (b.count / max) * hgt;
    const rect = document.createElementNS(SVG, 'rect');
    rect.setAttribute('x', String(i * bw + 2));
    rect.setAttribute('y', String(hgt - bh));
    rect.setAttribute('width', String(bw - 4));
    rect.setAttribute('height', String(bh));
    rect.setAttribute('class', 'hbar');
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${b.le === null ? `> ${fmtMs(h.buckets[i - 1]?.le)}` : `≤ ${fmtMs(b.le)}`}: ${b.count}`;
    rect.append(title);
    const text = document.createElementNS(SVG, 'text');
    text.setAttribute('x', String(i * bw + bw / 2));
    text.setAttribute('y', String(hgt + 11));
    text.setAttribute('class', 'axis');
    text.textContent = b.le === null ? '∞' : b.le >= 1000 ? `${b.le / 1000}s` : `${b.le}`;
    svg.append(rect, text);
  });
  box.replaceChildren(
    el(
      'div',
      'muted small',
      `convergence, last hour: ${h.count} changes · p50 ${fmtMs(h.p50Ms)} · p99 ${fmtMs(h.p99Ms)} · max ${fmtMs(h.maxMs)}`,
    ),
    svg,
  );
}

// ---------------------------------------------------------------- health

function renderHealth() {
  const h = state.health;
  if (!h) return;
  $('rejected-total').textContent = `(${h.rejectedTotal})`;
  $('rejected').replaceChildren(
    ...(h.rejected.length === 0
      ? [el('li', 'muted', 'none: every object was accepted')]
      : h.rejected.map((r) =>
          el('li', 'level-Error', [el('span', 'mono', r.where), ` ${r.object}${r.path ? ` ${r.path}` : ''}: `, el('span', '', r.message)]),
        )),
  );
  const a = h.analysis;
  $('analysis-scope').textContent = a ? `(${a.scope})` : '';
  const items = [];
  if (!a) items.push(el('li', 'muted', h.analysisNote ?? 'not analyzed yet'));
  else {
    for (const e of a.errors) items.push(el('li', 'level-Error', e));
    for (const m of a.messages) {
      items.push(
        el('li', `level-${m.level}`, [
          el('b', '', `${m.level} [${m.code}] `),
          el('span', '', `(${m.origin}${m.reference ? ` ${m.reference}` : ''}) `),
          el('span', '', m.message),
        ]),
      );
    }
    if (items.length === 0) items.push(el('li', 'muted', '✔ no validation issues found'));
  }
  $('analysis').replaceChildren(...items);
}

// ---------------------------------------------------------------- load

const CHARTS = [
  { key: 'pushesPerSec', title: 'xDS pushes/s', fmt: (v) => String(v) },
  { key: 'queued', title: 'push queue', fmt: (v) => String(v) },
  { key: 'cpuPercent', title: 'CPU %', fmt: (v) => `${v}%` },
  { key: 'rssBytes', title: 'RSS', fmt: fmtBytes },
  { key: 'heapUsedBytes', title: 'V8 heap used', fmt: fmtBytes },
];

function sparkline(values) {
  const w = 200;
  const h = 40;
  const max = Math.max(1, ...values);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('class', 'spark');
  svg.setAttribute('preserveAspectRatio', 'none');
  const n = values.length;
  const pts = values.map((v, i) => `${n <= 1 ? w : (i / (n - 1)) * w},${h - 1 - (v / max) * (h - 2)}`).join(' ');
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('points', pts);
  line.setAttribute('class', 'line');
  svg.append(line);
  return svg;
}

function renderLoad() {
  const samples = state.load;
  const last = samples[samples.length - 1];
  $('charts').replaceChildren(
    ...CHARTS.map((c) =>
      el('figure', 'chart-box', [
        el('figcaption', '', [c.title, el('b', '', last ? ` ${c.fmt(last[c.key])}` : ' –')]),
        sparkline(samples.map((s) => s[c.key])),
      ]),
    ),
  );
}

// ---------------------------------------------------------------- preview

async function runPreview() {
  const out = $('preview-result');
  const yaml = $('preview-yaml').value;
  if (yaml.trim() === '') {
    out.replaceChildren(el('p', 'level-Warning', 'paste a config change first'));
    return;
  }
  out.replaceChildren(el('p', 'muted', 'previewing…'));
  try {
    const res = await fetch('/debug/preview?file=console.yaml', {
      method: 'POST',
      body: yaml,
      headers: { 'content-type': 'application/yaml' },
    });
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (res.status === 400 && body && Array.isArray(body.errors)) {
      out.replaceChildren(
        el(
          'ul',
          'messages',
          body.errors.map((e) => el('li', 'level-Error', e)),
        ),
      );
      return;
    }
    if (!res.ok || !body) {
      out.replaceChildren(el('p', 'level-Error', `${res.status}: ${text.trim()}`));
      return;
    }
    const changed = body.changed.map((p) =>
      el('li', '', [
        el('b', 'mono', p.proxy),
        el(
          'ul',
          'configs',
          p.changes.map((c) =>
            el(
              'li',
              `change-${c.change}`,
              `${c.change} ${c.type} ${c.name}${c.fields ? ` (${c.fields.map((f) => f.path).join(', ')})` : ''}`,
            ),
          ),
        ),
      ]),
    );
    out.replaceChildren(
      el('p', '', `${body.configs.join(', ')}: ${body.changed.length} proxies would change, ${body.unchanged.length} would not.`),
      el('ul', 'preview-list', changed),
    );
  } catch (err) {
    out.replaceChildren(el('p', 'level-Error', `preview failed: ${err instanceof Error ? err.message : String(err)}`));
  }
}

// ---------------------------------------------------------------- stream

function apply(ev) {
  if (ev.summary) {
    $('sum-connected').textContent = String(ev.summary.connected);
    $('sum-version').textContent = ev.summary.pushVersion;
    $('sum-services').textContent = String(ev.summary.services);
  }
  if (ev.proxies) applyProxies(ev.proxies);
  if (ev.changes) {
    state.changes = ev.changes;
    renderChanges();
  }
  if (ev.histogram) {
    state.histogram = ev.histogram;
    renderHistogram();
  }
  if (ev.health) {
    state.health = ev.health;
    renderHealth();
  }
  if (ev.load) {
    if (ev.load.samples) state.load = [...ev.load.samples];
    if (ev.load.append) state.load.push(...ev.load.append);
    if (state.load.length > 300) state.load.splice(0, state.load.length - 300);
    renderLoad();
    // Once a second: the rows' "connected" ages move on (only the visible rows are redrawn).
    if (!ev.proxies) renderVisibleRows();
  }
  document.body.dataset.seq = String(ev.seq);
}

function connect() {
  const pill = $('stream-state');
  const es = new EventSource('/console/events');
  es.onopen = () => {
    pill.textContent = 'live';
    pill.dataset.state = 'live';
  };
  es.onerror = () => {
    // EventSource reconnects by itself (the server sets retry); say so instead of failing loudly.
    pill.textContent = 'reconnecting…';
    pill.dataset.state = 'reconnecting';
  };
  es.onmessage = (m) => apply(JSON.parse(m.data));
}

function init() {
  for (const id of ['f-namespace', 'f-kind', 'f-state']) $(id).addEventListener('change', filterRows);
  $('f-text').addEventListener('input', filterRows);
  $('proxy-scroll').addEventListener('scroll', () => window.requestAnimationFrame(renderVisibleRows), { passive: true });
  $('preview-run').addEventListener('click', () => void runPreview());
  connect();
}

init();
