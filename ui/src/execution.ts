// An execution: the grid as a table and as a heat map over two
// parameters, equity curves, rejected morphisms, the eight layers, replay,
// diff and the attestation.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, ApiError, enc, Footprint, LAYERS, Morphism, PnL, Replay } from './api';
import { badge, clear, digest, errorBox, fmt, add, h, section, table } from './dom';
import { go } from './router';
import { verifyEnvelope } from './verify';

const PAGE = 64;

// viridis, five stops: perceptually even and readable by the colour-blind.
const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function colour(t: number): string {
  const x = Math.min(Math.max(t, 0), 1) * (STOPS.length - 1);
  const i = Math.min(Math.floor(x), STOPS.length - 2), f = x - i;
  const c = STOPS[i].map((v, k) => Math.round(v + (STOPS[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function key(v: unknown): string { return JSON.stringify(v); }

// axes lists the parameters whose value differs across the grid, each with
// its values in grid order.
function axes(ms: Morphism[]): { name: string; values: unknown[] }[] {
  const out: { name: string; values: unknown[] }[] = [];
  const names = Object.keys(ms[0]?.params ?? {});
  for (const n of names) {
    const seen = new Map<string, unknown>();
    for (const m of ms) if (!seen.has(key(m.params[n]))) seen.set(key(m.params[n]), m.params[n]);
    if (seen.size > 1) out.push({ name: n, values: [...seen.values()] });
  }
  return out;
}

function predicateCounts(ms: Morphism[]): string {
  const n = new Map<string, number>();
  for (const m of ms) for (const p of m.rejected) n.set(p, (n.get(p) ?? 0) + 1);
  return [...n].map(([p, c]) => `${p} ${c}`).join(', ');
}

function paramText(p: Record<string, unknown>): string {
  return Object.entries(p).map(([k, v]) => `${k}=${fmt(v)}`).join(', ');
}

export async function executionPage(main: HTMLElement, hash: string): Promise<void> {
  add(main, h('h1', {}, 'Execution'));
  let fp: Footprint;
  performance.mark('execution-start');
  try { fp = await api<Footprint>('GET', `/v1/executions/${enc(hash)}`); } catch (e) { add(main, errorBox(e instanceof ApiError ? e.problem : e)); return; }
  performance.mark('execution-footprint');
  const ms = fp.morphisms;
  const sel = fp.selected_index;
  const dir = fp.metric.direction;
  const scores = ms.map((m) => m.score).filter((s): s is number => s !== null);
  const lo = Math.min(...scores), hi = Math.max(...scores);
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });

  // Shown curves: the selected morphism, then each clicked one (up to 5).
  const shown: number[] = sel === null ? [] : [sel];
  const pnlCache = new Map<number, Promise<PnL>>();
  const loadPnL = (i: number) => {
    if (!pnlCache.has(i)) pnlCache.set(i, api<PnL>('GET', `/v1/executions/${enc(fp.hash)}/morphisms/${i}/pnl`));
    return pnlCache.get(i)!;
  };
  const chartBox = h('div', { class: 'chart', id: 'equity', role: 'img', 'aria-label': 'Equity curves: cumulative P&L of the shown morphisms over the evaluation window' });
  const legend = h('ul', { class: 'legend', id: 'equity-legend' });
  let plot: uPlot | null = null;
  const PALETTE = ['#c2410c', '#1d4ed8', '#15803d', '#7e22ce', '#0f766e', '#a16207'];

  async function drawEquity(): Promise<void> {
    const runnable = shown.filter((i) => ms[i].artifacts.length > 0);
    const series = await Promise.all(runnable.map(loadPnL));
    if (series.length === 0) { clear(chartBox); add(chartBox, h('p', {}, 'No morphism ran: nothing to draw.')); return; }
    // Cumulative P&L from the grid's common evaluation window on.
    const from = fp.evaluation.from ?? series[0].dates[0];
    const start = Math.max(0, series[0].dates.findIndex((d) => d >= from));
    const xs = series[0].dates.slice(start).map((d) => Date.parse(d + 'T00:00:00Z') / 1000);
    const ys = series.map((s) => { let acc = 0; return s.pnl.slice(start).map((v) => (acc += v ?? 0)); });
    const data = [xs, ...ys] as uPlot.AlignedData;
    const opts: uPlot.Options = {
      width: Math.max(320, chartBox.clientWidth || 800), height: 280,
      legend: { show: false }, cursor: { drag: { x: true, y: false } },
      scales: { x: { time: true } },
      axes: [{ stroke: '#334155' }, { stroke: '#334155', label: 'cumulative P&L', size: 60 }],
      series: [{}, ...runnable.map((i, k) => ({ label: `#${i}`, stroke: PALETTE[k % PALETTE.length], width: i === sel ? 2.5 : 1.5 }))],
    };
    plot?.destroy();
    clear(chartBox);
    plot = new uPlot(opts, data, chartBox);
    clear(legend);
    runnable.forEach((i, k) => add(legend, h('li', {},
      h('span', { class: `swatch s${k % PALETTE.length}`, 'aria-hidden': 'true' }),
      `#${i}${i === sel ? ' (selected)' : ''}: ${paramText(ms[i].params)} — ${fp.metric.name} ${fmt(ms[i].score)}, final ${fmt(ys[k][ys[k].length - 1])}`)));
    chartBox.setAttribute('data-series', String(runnable.length));
  }

  const detail = h('div', { id: 'morphism-detail' });
  function showMorphism(i: number): void {
    const m = ms[i];
    clear(detail);
    add(detail, h('h3', {}, `Morphism #${i}${i === sel ? ' — selected' : ''}`),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Hash'), h('dd', {}, digest(m.hash)),
        h('dt', {}, 'Parameters'), h('dd', {}, paramText(m.params)),
        h('dt', {}, 'Score'), h('dd', {}, `${fp.metric.name} ${fmt(m.score)}`),
        h('dt', {}, 'Plan'), h('dd', {}, digest(m.plan)),
        h('dt', {}, 'Admissible'), h('dd', {}, badge(m.admissible, 'yes', 'rejected: ' + m.rejected.join(', '))),
        m.reasons.length ? [h('dt', {}, 'Reasons'), h('dd', {}, m.reasons.map((r) => h('div', {}, h('code', {}, r.predicate), ' ', r.detail)))] : null,
        h('dt', {}, 'Artifacts'), h('dd', {}, m.artifacts.length ? m.artifacts.map((a) => h('div', {}, a.name, ' ', digest(a.digest), ` ${a.bytes} bytes`)) : 'none')));
  }

  async function pick(i: number): Promise<void> {
    showMorphism(i);
    if (ms[i].artifacts.length > 0 && !shown.includes(i)) {
      shown.push(i);
      if (shown.length > 6) shown.splice(sel === null ? 0 : 1, 1);
    }
    status.textContent = `Morphism #${i}: ${paramText(ms[i].params)}, ${fp.metric.name} ${fmt(ms[i].score)}${ms[i].admissible ? '' : ' (rejected)'}`;
    try { await drawEquity(); } catch (e) { add(chartBox, errorBox(e instanceof ApiError ? e.problem : e)); }
    heat.draw();
  }

  // Heat map over two parameters; others held at the selected morphism's.
  const ax = axes(ms);
  const heat = heatMap(fp, ax, lo, hi, (i) => void pick(i), () => shown);

  // The grid as a table, a page at a time.
  let page = 0;
  const gridBox = h('div', { id: 'grid' });
  function drawGrid(): void {
    clear(gridBox);
    const names = Object.keys(ms[0]?.params ?? {});
    const rows = ms.slice(page * PAGE, (page + 1) * PAGE).map((m) => [
      h('button', { type: 'button', class: 'linkish', onclick: () => void pick(m.index), 'aria-label': `show morphism ${m.index}` }, `#${m.index}`),
      ...names.map((n) => fmt(m.params[n])),
      fmt(m.score),
      m.index === sel ? badge(true, 'selected', '') : m.admissible ? '' : badge(false, '', m.rejected.join(', ')),
    ]);
    const pages = Math.ceil(ms.length / PAGE);
    add(gridBox, table(['Morphism', ...names, fp.metric.name, 'Status'], rows, `Grid: ${ms.length} morphisms, page ${page + 1} of ${pages}`),
      pages > 1 ? h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: page === 0, onclick: () => { page--; drawGrid(); } }, '← Previous'),
        h('button', { type: 'button', disabled: page >= pages - 1, onclick: () => { page++; drawGrid(); } }, 'Next →')) : null);
  }
  drawGrid();

  const rejected = ms.filter((m) => !m.admissible);
  const replayOut = h('div', { id: 'replay-out', 'aria-live': 'polite' });
  const attOut = h('div', { id: 'attestation-out', 'aria-live': 'polite' });
  const other = h('input', { id: 'diff-with', type: 'text', placeholder: 'sha256:…', size: 72, autocomplete: 'off', spellcheck: 'false' });

  add(main, 
    h('dl', { class: 'facts' },
      h('dt', {}, 'Execution hash'), h('dd', {}, digest(fp.hash, `/ui/executions/${fp.hash}`)),
      h('dt', {}, 'Request'), h('dd', {}, `${fp.family?.name ?? 'pipeline'} scored by ${fp.metric.name} (${dir}) on `, h('code', {}, fp.data.path)),
      h('dt', {}, 'Grounding'), h('dd', {}, digest(fp.grounding, `/ui/groundings/${fp.grounding}`)),
      h('dt', {}, 'Registry'), h('dd', {}, `version ${fp.registry_version} `, digest(fp.registry, `/ui/registry/versions/${fp.registry_version}`)),
      h('dt', {}, 'Evaluation'), h('dd', {}, `${fp.evaluation.from ?? '—'} → ${fp.evaluation.to ?? '—'} (${fp.evaluation.rows} rows)`),
      h('dt', {}, 'Grid'), h('dd', {}, `${ms.length} morphisms, ${rejected.length} rejected; selected `, sel === null ? 'none' : h('strong', {}, `#${sel}: ${paramText(ms[sel].params)} (${fp.metric.name} ${fmt(ms[sel].score)})`))),
    status,
    section('Heat map', heat.el),
    section('Equity curves', h('p', { class: 'hint' }, 'The selected morphism and each one clicked in the heat map or the grid.'), chartBox, legend),
    section('Selected morphism', detail),
    section('Grid', gridBox),
    section('Rejected morphisms', rejected.length === 0 ? h('p', {}, 'None: every morphism passed the risk predicates.') :
      h('details', { id: 'rejected' }, h('summary', {}, `${rejected.length} rejected — by predicate: `, predicateCounts(rejected)),
        table(['Morphism', 'Parameters', 'Predicates', 'Why'], rejected.map((m) => [`#${m.index}`, paramText(m.params),
          m.rejected.map((p) => h('code', { class: 'pred' }, p)), m.reasons.map((r) => h('div', {}, r.detail))])))),
    section('Layers', table(['Layer', 'Digest'], LAYERS.map((l) => [l, h('code', { class: 'digest full' }, fp.layers[l] ?? '—')]))),
    section('Replay', h('div', { class: 'actions' }, h('button', {
      type: 'button', id: 'replay',
      onclick: async (ev: Event) => {
        const b = ev.currentTarget as HTMLButtonElement;
        b.disabled = true; clear(replayOut); add(replayOut, h('p', {}, 'Replaying…'));
        try {
          const r = await api<Replay>('POST', `/v1/executions/${enc(fp.hash)}/replay`);
          clear(replayOut);
          add(replayOut, h('p', { class: 'decision', id: 'replay-result' }, badge(r.match, 'Every layer matched', 'Replay differs')),
            table(['Layer', 'Stored', 'Replayed', 'Result'], r.layers.map((l) => [l.layer, digest(l.stored), digest(l.replayed), badge(l.match, 'match', 'differs')])));
        } catch (e) { clear(replayOut); add(replayOut, errorBox(e instanceof ApiError ? e.problem : e)); }
        b.disabled = false;
      },
    }, 'Replay')), replayOut),
    section('Diff with another execution', h('form', {
      onsubmit: (ev: Event) => { ev.preventDefault(); const o = other.value.trim(); if (o) go(`/ui/diff/${fp.hash}/${o}`); },
    }, h('label', { for: 'diff-with' }, 'Other execution hash'), other, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Diff')))),
    section('Attestation', h('div', { class: 'actions' },
      h('a', { href: `/v1/executions/${fp.hash}/attestation`, download: `${fp.hash.replace(':', '-')}.dsse.json`, class: 'button' }, 'Download attestation'),
      h('button', { type: 'button', id: 'verify', onclick: async () => { clear(attOut); add(attOut, await verifyEnvelope(`/v1/executions/${enc(fp.hash)}/attestation`, fp.hash)); } }, 'Verify')), attOut),
  );
  if (sel !== null) showMorphism(sel);
  heat.draw();
  performance.mark('execution-drawn');
  await drawEquity().catch((e) => add(chartBox, errorBox(e instanceof ApiError ? e.problem : e)));
  performance.mark('execution-interactive');
}

interface Heat { el: HTMLElement; draw: () => void }

function heatMap(fp: Footprint, ax: { name: string; values: unknown[] }[], lo: number, hi: number, onPick: (i: number) => void, shown: () => number[]): Heat {
  const ms = fp.morphisms;
  if (ax.length === 0) return { el: h('p', {}, 'One morphism: no parameter varies, so there is no map.'), draw: () => {} };
  const sel = fp.selected_index ?? 0;
  let xName = ax[0].name, yName = (ax[1] ?? ax[0]).name;
  const canvas = h('canvas', { class: 'heat', 'aria-hidden': 'true' });
  const cursor = { x: 0, y: 0 };
  const tip = h('p', { class: 'hint', id: 'heat-cell' });
  const axis = (n: string) => ax.find((a) => a.name === n)!;

  // cellIndex is the morphism at (x, y) with the other parameters as the
  // selected morphism has them: a lookup by the parameters' key, built once
  // (a 256-cell map is drawn on every pick).
  const paramKey = (p: Record<string, unknown>) => key(Object.keys(p).sort().map((n) => [n, p[n]]));
  const byParams = new Map(ms.map((m) => [paramKey(m.params), m.index]));
  function cellIndex(xi: number, yi: number): number {
    return byParams.get(paramKey({ ...ms[sel].params, [xName]: axis(xName).values[xi], [yName]: axis(yName).values[yi] })) ?? -1;
  }

  const CELL = 28, PADL = 70, PADB = 44, PADT = 8;
  function draw(): void {
    const X = axis(xName).values, Y = yName === xName ? [null] : axis(yName).values;
    const w = PADL + X.length * CELL + 8, hgt = PADT + Y.length * CELL + PADB;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = w * dpr; canvas.height = hgt * dpr;
    canvas.style.width = w + 'px'; canvas.style.height = hgt + 'px'; // CSSOM, which the CSP allows
    const g = canvas.getContext('2d')!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, hgt);
    g.font = '11px system-ui, sans-serif';
    const onCurve = new Set(shown());
    for (let yi = 0; yi < Y.length; yi++) {
      for (let xi = 0; xi < X.length; xi++) {
        const i = yName === xName ? cellIndex(xi, xi) : cellIndex(xi, yi);
        const px = PADL + xi * CELL, py = PADT + (Y.length - 1 - yi) * CELL;
        const m = i >= 0 ? ms[i] : null;
        if (!m || m.score === null) {
          g.fillStyle = '#e2e8f0'; g.fillRect(px, py, CELL - 1, CELL - 1);
          g.strokeStyle = '#94a3b8'; g.beginPath(); g.moveTo(px + 4, py + 4); g.lineTo(px + CELL - 5, py + CELL - 5); g.moveTo(px + CELL - 5, py + 4); g.lineTo(px + 4, py + CELL - 5); g.stroke();
        } else {
          g.fillStyle = colour(hi > lo ? (m.score - lo) / (hi - lo) : 0.5); g.fillRect(px, py, CELL - 1, CELL - 1);
        }
        if (m && (m.index === fp.selected_index || onCurve.has(m.index))) {
          g.lineWidth = m.index === fp.selected_index ? 3 : 2; g.strokeStyle = m.index === fp.selected_index ? '#dc2626' : '#0f172a';
          g.strokeRect(px + 1.5, py + 1.5, CELL - 4, CELL - 4); g.lineWidth = 1;
        }
        if (xi === cursor.x && yi === cursor.y && document.activeElement === wrap) {
          g.setLineDash([3, 2]); g.strokeStyle = '#000'; g.strokeRect(px + 0.5, py + 0.5, CELL - 2, CELL - 2); g.setLineDash([]);
        }
      }
    }
    g.fillStyle = '#0f172a'; g.textAlign = 'center';
    X.forEach((v, xi) => g.fillText(fmt(v), PADL + xi * CELL + CELL / 2, PADT + Y.length * CELL + 14));
    g.fillText(xName, PADL + (X.length * CELL) / 2, PADT + Y.length * CELL + 34);
    g.textAlign = 'right';
    if (yName !== xName) Y.forEach((v, yi) => g.fillText(fmt(v), PADL - 6, PADT + (Y.length - 1 - yi) * CELL + CELL / 2 + 4));
    g.save(); g.translate(14, PADT + (Y.length * CELL) / 2); g.rotate(-Math.PI / 2); g.textAlign = 'center'; g.fillText(yName === xName ? '' : yName, 0, 0); g.restore();
    const i = cellIndex(cursor.x, yName === xName ? cursor.x : cursor.y);
    tip.textContent = i >= 0 ? `Cell ${xName}=${fmt(X[cursor.x])}${yName !== xName ? `, ${yName}=${fmt(Y[cursor.y])}` : ''}: morphism #${i}, ${fp.metric.name} ${fmt(ms[i].score)}${ms[i].admissible ? '' : ' — rejected (' + ms[i].rejected.join(', ') + ')'}` : '';
  }

  canvas.addEventListener('click', (ev) => {
    const r = canvas.getBoundingClientRect();
    const xi = Math.floor((ev.clientX - r.left - PADL) / CELL);
    const Yn = yName === xName ? 1 : axis(yName).values.length;
    const yi = Yn - 1 - Math.floor((ev.clientY - r.top - PADT) / CELL);
    if (xi < 0 || xi >= axis(xName).values.length || yi < 0 || yi >= Yn) return;
    cursor.x = xi; cursor.y = yi;
    const i = cellIndex(xi, yName === xName ? xi : yi);
    if (i >= 0) onPick(i);
  });
  // Keyboard: the arrows move over the cells, Enter or Space picks one.
  const wrap = h('div', { class: 'heat-wrap', tabindex: 0, role: 'group', 'aria-label': 'Heat map of scores: arrow keys move over the cells, Enter shows the morphism', 'aria-describedby': 'heat-cell' }, canvas);
  wrap.addEventListener('keydown', (ev) => {
    const nx = axis(xName).values.length, ny = yName === xName ? 1 : axis(yName).values.length;
    const moves: Record<string, [number, number]> = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
    if (moves[ev.key]) {
      ev.preventDefault();
      cursor.x = Math.min(nx - 1, Math.max(0, cursor.x + moves[ev.key][0]));
      cursor.y = Math.min(ny - 1, Math.max(0, cursor.y + moves[ev.key][1]));
      draw();
    } else if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      const i = cellIndex(cursor.x, yName === xName ? cursor.x : cursor.y);
      if (i >= 0) onPick(i);
    }
  });
  wrap.addEventListener('focus', draw);
  wrap.addEventListener('blur', draw);

  const pickAxis = (id: string, label: string, cur: string, set: (v: string) => void) => {
    const s = h('select', { id, onchange: (ev: Event) => { set((ev.target as HTMLSelectElement).value); draw(); } },
      ax.map((a) => h('option', { value: a.name, selected: a.name === cur }, a.name)));
    return h('span', { class: 'field' }, h('label', { for: id }, label), ' ', s);
  };
  const scale = h('div', { class: 'scale', 'aria-hidden': 'true' }, h('span', {}, `${fp.metric.name} ${fmt(lo)}`), h('span', { class: 'ramp' }), h('span', {}, fmt(hi)),
    h('span', { class: 'hint' }, fp.metric.direction === 'minimize' ? '(lower is better)' : '(higher is better)'));
  const el = h('div', {},
    h('div', { class: 'controls' }, pickAxis('heat-x', 'x axis', xName, (v) => { xName = v; cursor.x = 0; }), ' ', pickAxis('heat-y', 'y axis', yName, (v) => { yName = v; cursor.y = 0; }),
      h('span', { class: 'hint' }, ` ${fp.metric.name} (${fp.metric.direction}); grey ✕: rejected or no score; red frame: selected; dark frame: on the equity chart`)),
    scale, wrap, tip);
  return { el, draw };
}
