// Registry, diffs, sessions, gateway, policies and fuzzing.
import { api, ApiError, Diff, enc, hasToken, LAYERS } from './api';
import { badge, clear, digest, errorBox, fmt, add, h, pre, section, table } from './dom';
import { go } from './router';

type J = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const fail = (main: HTMLElement, e: unknown) => add(main, errorBox(e instanceof ApiError ? e.problem : e));

// needsToken says so when a page's data is admin-only and no token is set.
function needsToken(main: HTMLElement): boolean {
  if (hasToken()) return false;
  add(main, h('p', { class: 'notice', role: 'note' }, 'This is admin-only: enter the admin token with “Admin token” at the top. It is kept in this page’s memory only.'));
  return true;
}

export async function registryPage(main: HTMLElement): Promise<void> {
  add(main, h('h1', {}, 'Registry'));
  let reg: J;
  try { reg = await api<J>('GET', '/v1/registry'); } catch (e) { fail(main, e); return; }
  const caps = reg.capabilities as J[];
  const kinds = [...new Set(caps.map((c) => c.kind as string))].sort();
  const filter = h('input', { id: 'cap-filter', type: 'search', placeholder: 'filter by name', autocomplete: 'off' });
  const kindSel = h('select', { id: 'cap-kind' }, h('option', { value: '' }, 'every kind'), kinds.map((k) => h('option', { value: k }, k)));
  const list = h('div', { id: 'cap-list' });
  const draw = () => {
    clear(list);
    const f = filter.value.toLowerCase(), k = kindSel.value;
    const rows = caps.filter((c) => (!k || c.kind === k) && (c.name as string).toLowerCase().includes(f));
    add(list, table(['Name', 'Kind', 'Identity', 'Description'], rows.slice(0, 200).map((c) => [
      h('a', { href: `/ui/registry/capabilities/${enc(c.name)}` }, c.name), c.kind, digest(c.identity), c.disc?.description ?? c.description ?? '']),
    `${rows.length} of ${caps.length} entries${rows.length > 200 ? ' (the first 200 shown: filter to narrow)' : ''}`));
  };
  filter.addEventListener('input', draw); kindSel.addEventListener('change', draw);
  add(main, 
    h('dl', { class: 'facts' }, h('dt', {}, 'Version'), h('dd', {}, String(reg.version)), h('dt', {}, 'Registry hash'), h('dd', {}, digest(reg.registry))),
    section('Entries', h('div', { class: 'controls' }, h('label', { for: 'cap-filter' }, 'Name'), ' ', filter, ' ', h('label', { for: 'cap-kind' }, 'Kind'), ' ', kindSel), list),
    section('Versions', await historyBox()));
  draw();
}

// historyBox lists the registry's versions a page at a time (the API's
// limit and before cursor), with a form to diff two of them.
async function historyBox(): Promise<HTMLElement> {
  const box = h('div', { id: 'history' });
  const more = h('div', {});
  const rows: HTMLElement = h('tbody', {});
  async function load(path: string): Promise<void> {
    clear(more);
    const page = await api<{ versions: J[]; next?: string }>('GET', path);
    for (const v of page.versions) add(rows, h('tr', {},
      h('td', {}, h('a', { href: `/ui/registry/versions/${v.version}` }, String(v.version))),
      h('td', {}, digest(v.registry)), h('td', {}, `${v.change?.op ?? ''} ${(v.change?.names ?? []).slice(0, 6).join(', ')}${(v.change?.names?.length ?? 0) > 6 ? ` … (${v.change.names.length})` : ''}`),
      h('td', {}, String(v.count)), h('td', {}, v.created)));
    if (page.next) add(more, h('button', { type: 'button', onclick: () => void load(page.next!) }, 'Older versions'));
  }
  await load('/v1/registry/history?limit=20');
  const a = h('input', { id: 'va', type: 'number', min: 1, size: 6 }), b = h('input', { id: 'vb', type: 'number', min: 1, size: 6 });
  add(box, h('table', {}, h('thead', {}, h('tr', {}, ['Version', 'Hash', 'Change', 'Entries', 'Created'].map((x) => h('th', { scope: 'col' }, x)))), rows), more,
    h('form', { class: 'controls', onsubmit: (ev: Event) => { ev.preventDefault(); if (a.value && b.value) go(`/ui/registry/diff/${a.value}/${b.value}`); } },
      h('label', { for: 'va' }, 'Diff version'), ' ', a, ' ', h('label', { for: 'vb' }, 'with'), ' ', b, ' ', h('button', { type: 'submit' }, 'Diff')));
  return box;
}

export async function capabilityPage(main: HTMLElement, name: string): Promise<void> {
  add(main, h('h1', {}, name));
  try {
    const c = await api<J>('GET', `/v1/registry/capabilities/${enc(name)}`);
    add(main, h('dl', { class: 'facts' },
      h('dt', {}, 'Kind'), h('dd', {}, c.kind), h('dt', {}, 'Identity'), h('dd', {}, digest(c.identity)),
      h('dt', {}, 'Title'), h('dd', { id: 'cap-title' }, c.disc?.title ?? '—'),
      h('dt', {}, 'Description'), h('dd', { id: 'cap-description' }, c.disc?.description ?? '—'),
      h('dt', {}, 'Aliases'), h('dd', {}, (c.disc?.aliases ?? []).map((x: string) => h('span', { class: 'chip' }, x))),
      h('dt', {}, 'Tags'), h('dd', {}, (c.disc?.tags ?? []).map((x: string) => h('span', { class: 'chip' }, x)))),
    section('Layers: sem, alg, impl (what the identity hashes)', pre({ sem: c.sem, alg: c.alg, impl: c.impl })),
    section('Discovery words (not hashed)', pre(c.disc)));
  } catch (e) { fail(main, e); }
}

export async function versionPage(main: HTMLElement, n: string): Promise<void> {
  add(main, h('h1', {}, `Registry version ${n}`));
  try {
    const v = await api<J>('GET', `/v1/registry/versions/${enc(n)}`);
    const caps = v.capabilities as J[];
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'Registry hash'), h('dd', {}, digest(v.registry)), h('dt', {}, 'Entries'), h('dd', {}, String(caps.length))),
      table(['Name', 'Kind', 'Identity'], caps.map((c) => [c.name, c.kind, digest(c.identity)])));
  } catch (e) { fail(main, e); }
}

// registryDiffPage compares two versions' entries: which capabilities
// were added, removed, changed (another identity) or re-described (the
// same identity, other words), and in which fields.
export async function registryDiffPage(main: HTMLElement, a: string, b: string): Promise<void> {
  add(main, h('h1', {}, `Registry version ${a} → ${b}`));
  try {
    const [va, vb] = await Promise.all([api<J>('GET', `/v1/registry/versions/${enc(a)}`), api<J>('GET', `/v1/registry/versions/${enc(b)}`)]);
    const ma = new Map((va.capabilities as J[]).map((c) => [c.name as string, c])), mb = new Map((vb.capabilities as J[]).map((c) => [c.name as string, c]));
    const rows: [string, string, string][] = [];
    for (const [n, c] of mb) {
      const o = ma.get(n);
      if (!o) { rows.push([n, 'added', '']); continue; }
      const fields = ['kind', 'sem', 'alg', 'impl', 'disc'].filter((f) => JSON.stringify(o[f]) !== JSON.stringify(c[f]));
      if (o.identity !== c.identity) rows.push([n, 'changed', fields.join(', ')]);
      else if (fields.length) rows.push([n, 're-described', fields.join(', ')]);
    }
    for (const n of ma.keys()) if (!mb.has(n)) rows.push([n, 'removed', '']);
    rows.sort((x, y) => x[0].localeCompare(y[0]));
    add(main, h('p', {}, `${rows.length} capabilities differ.`),
      table(['Capability', 'Change', 'Fields'], rows.map(([n, ch, f]) => [h('a', { href: `/ui/registry/capabilities/${enc(n)}` }, n), ch, f])));
  } catch (e) { fail(main, e); }
}

export async function diffPage(main: HTMLElement, a: string, b: string): Promise<void> {
  add(main, h('h1', {}, 'Diff of two executions'));
  try {
    const d = await api<Diff>('GET', `/v1/diff/${enc(a)}/${enc(b)}`);
    const byLayer = new Map(d.layers.map((l) => [l.layer, l]));
    add(main, 
      h('dl', { class: 'facts' }, h('dt', {}, 'A'), h('dd', {}, digest(d.a, `/ui/executions/${d.a}`)), h('dt', {}, 'B'), h('dd', {}, digest(d.b, `/ui/executions/${d.b}`))),
      h('p', { class: 'decision', id: 'diff-summary' }, badge(d.same, 'The same execution', 'Changed: ' + d.layers.filter((l) => !l.same).map((l) => l.layer).join(', '))),
      table(['Layer', 'A', 'B', 'Result', 'What changed'], LAYERS.map((name) => {
        const l = byLayer.get(name);
        if (!l) return [name, '—', '—', '', ''];
        return [name, digest(l.a), digest(l.b), badge(l.same, 'same', 'changed'), l.same ? '' : changes(l)];
      })));
  } catch (e) { fail(main, e); }
}

// changes summarises what a diff layer reports inside it.
function changes(l: J): HTMLElement {
  const out = h('div', { class: 'changes' });
  if (Array.isArray(l.request)) add(out, ...l.request.map((r: J) => h('div', {}, h('code', {}, r.pointer), `: ${fmt(r.a)} → ${fmt(r.b)}`)));
  if (Array.isArray(l.morphisms)) {
    const ms = l.morphisms as J[];
    add(out, h('div', {}, `${ms.length} morphisms differ`), ...ms.slice(0, 5).map((m) => h('div', {}, `#${m.index}: ${fmt(m.a)} → ${fmt(m.b)}`)), ms.length > 5 ? h('div', { class: 'muted' }, '…') : null);
  }
  if (l.selection) add(out, h('div', {}, 'selected ', digest(l.selection.a), ' → ', digest(l.selection.b)));
  if (l.registry) {
    const r = l.registry;
    for (const k of ['added', 'removed', 'changed', 'redescribed']) if (r[k]?.length) add(out, h('div', {}, `${k}: ${r[k].map((x: J) => x.name ?? x).join(', ')}`));
  }
  if (l.data) add(out, h('div', {}, pre(l.data)));
  if (!out.firstChild) add(out, h('span', { class: 'muted' }, 'see the JSON: GET /v1/diff/…'));
  return out;
}

export function executionsPage(main: HTMLElement): void {
  const input = h('input', { id: 'exec-hash', type: 'text', placeholder: 'sha256:…', size: 72, autocomplete: 'off', spellcheck: 'false' });
  add(main, h('h1', {}, 'Executions'),
    h('p', {}, 'Open an execution by its hash (every page of this UI has a URL: link one from a digest).'),
    h('form', { onsubmit: (ev: Event) => { ev.preventDefault(); if (input.value.trim()) go(`/ui/executions/${input.value.trim()}`); } },
      h('label', { for: 'exec-hash' }, 'Execution hash'), input, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Open'))));
}

export function sessionsPage(main: HTMLElement): void {
  const input = h('input', { id: 'session-id', type: 'text', placeholder: 'sha256:…', size: 72, autocomplete: 'off', spellcheck: 'false' });
  add(main, h('h1', {}, 'Sessions'), h('p', {}, 'A session is read with the admin token (or its own). Open one by id:'),
    h('form', { onsubmit: (ev: Event) => { ev.preventDefault(); if (input.value.trim()) go(`/ui/sessions/${input.value.trim()}`); } },
      h('label', { for: 'session-id' }, 'Session id'), input, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Open'))));
}

export async function sessionPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, 'Session'));
  if (needsToken(main)) return;
  try {
    const s = await api<J>('GET', `/v1/sessions/${enc(id)}`);
    type Ev = { at: string; el: HTMLElement };
    const evs: Ev[] = [];
    for (const t of s.turns as J[]) evs.push({ at: t.at, el: h('li', { class: 'turn' },
      h('span', { class: 'when' }, t.at), h('span', { class: 'kind' }, `Turn ${t.seq} (${t.by})`),
      h('blockquote', {}, t.prompt), h('div', {}, 'evidence ', digest(t.evidence, `/ui/discoveries/${t.evidence}`), t.facts ? [' facts ', h('code', {}, JSON.stringify(t.facts))] : null)) });
    for (const c of s.calls as J[]) {
      const ok = c.decision === 'admitted';
      evs.push({ at: c.at, el: h('li', { class: ok ? 'call' : 'call refused' },
        h('span', { class: 'when' }, c.at), h('span', { class: 'kind' }, `Call ${c.seq}: `, h('code', {}, c.tool)), ' ', badge(ok, 'admitted', c.decision),
        c.outcome ? h('div', {}, c.outcome) : null,
        ok ? null : h('div', {}, 'refused by Γ before it was forwarded; its request ', digest(c.request)),
        h('div', { class: 'muted' }, 'state after ', digest(c.state), c.hash ? [' · footprint ', digest(c.hash, `/ui/calls/${c.hash}`)] : null)) });
    }
    evs.sort((x, y) => x.at.localeCompare(y.at));
    add(main, h('dl', { class: 'facts' },
      h('dt', {}, 'Session'), h('dd', {}, digest(s.id, `/ui/sessions/${s.id}`)),
      h('dt', {}, 'State digest'), h('dd', {}, h('code', { class: 'digest full', id: 'state-digest' }, s.state)),
      h('dt', {}, 'Open'), h('dd', {}, s.closed ? `closed ${s.closed_at}` : 'open'),
      h('dt', {}, 'Calls'), h('dd', {}, `${s.calls.length}, ${(s.calls as J[]).filter((c) => c.decision !== 'admitted').length} refused`)),
    section('Timeline', h('ol', { class: 'timeline', id: 'timeline' }, evs.map((e) => e.el))));
  } catch (e) { fail(main, e); }
}

export async function callPage(main: HTMLElement, hash: string): Promise<void> {
  add(main, h('h1', {}, 'Call'));
  if (needsToken(main)) return;
  try {
    const c = await api<J>('GET', `/v1/calls/${enc(hash)}`);
    const layers = c.layers as J;
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'Call hash'), h('dd', {}, digest(c.hash)), h('dt', {}, 'Tool'), h('dd', {}, c.tool ?? '')),
      section('Layers', table(['Layer', 'Digest'], Object.entries(layers ?? {}).map(([k, v]) => [k, h('code', { class: 'digest full' }, String(v))]))),
      section('Footprint', pre(c)));
  } catch (e) { fail(main, e); }
}

// listPage shows the list at path's field key as a table, one row per item.
async function listPage(main: HTMLElement, title: string, path: string, key: string, empty: string, headers: string[], row: (x: J) => (Node | string)[]): Promise<void> {
  add(main, h('h1', {}, title));
  try {
    const items = (await api<J>('GET', path))[key] as J[];
    add(main, items.length === 0 ? h('p', {}, empty) : table(headers, items.map(row)));
  } catch (e) { fail(main, e); }
}

export const upstreamsPage = (main: HTMLElement) => listPage(main, 'Upstreams', '/v1/upstreams', 'upstreams', 'No upstream is configured.',
  ['Upstream', 'Connected', 'Server', 'Tools', 'Drift', 'Restarts'], (x) => [
    h('a', { href: `/ui/upstreams/${enc(x.name)}` }, x.name), badge(x.status.connected, 'connected', 'down'),
    x.status.server ? `${x.status.server.name} ${x.status.server.version}` : '—', String(x.status.tools.length),
    String((x.status.tools as J[]).filter((t) => t.state === 'drift').length), String(x.status.restarts)]);

export async function upstreamPage(main: HTMLElement, name: string): Promise<void> {
  add(main, h('h1', {}, `Upstream ${name}`));
  let u: J;
  try { u = await api<J>('GET', `/v1/upstreams/${enc(name)}`); } catch (e) { fail(main, e); return; }
  const tools = u.status.tools as J[];
  // A tool's words are those of its entry in force (what the sync approved).
  const words = await Promise.all(tools.map((t) => api<J>('GET', `/v1/registry/capabilities/${enc(name + '.' + t.name)}`).catch(() => null)));
  const planOut = h('div', { id: 'sync-plan', 'aria-live': 'polite' });
  add(main, 
    h('dl', { class: 'facts' }, h('dt', {}, 'Status'), h('dd', {}, badge(u.status.connected, 'connected', 'down'), u.status.last_error ? ' ' + u.status.last_error : ''),
      h('dt', {}, 'Server'), h('dd', {}, u.status.server ? `${u.status.server.name} ${u.status.server.version}` : '—')),
    section('Tools', table(['Tool', 'State', 'Quarantined', 'Description (approved)', 'Identity'], tools.map((t, i) => [
      words[i] ? h('a', { href: `/ui/registry/capabilities/${enc(name + '.' + t.name)}` }, t.name) : t.name,
      t.state + (t.described ? ' (re-described live)' : ''), t.state === 'drift' ? badge(false, '', 'quarantined (F12)') : 'no',
      h('span', { class: 'tool-description' }, words[i]?.disc?.description ?? t.problem ?? '—'), digest(t.identity)]))),
    section('Sync', h('p', {}, 'The plan compares the live tools with the registry; applying writes it as one registry version (admin).'),
      h('div', { class: 'actions' },
        h('button', { type: 'button', id: 'plan-sync', onclick: () => void sync(false) }, 'Plan sync'),
        h('button', { type: 'button', id: 'apply-sync', onclick: () => void sync(true) }, 'Apply sync')), planOut));
  async function sync(apply: boolean): Promise<void> {
    clear(planOut);
    try {
      const p = await api<J>('POST', `/v1/upstreams/${enc(name)}/sync`, { apply }, true);
      add(planOut, h('p', {}, p.applied ? `Applied as registry version ${p.version}.` : 'Plan (nothing written):'),
        table(['Tool', 'Change', 'Findings', 'Held'], (p.plan as J[]).map((s) => [s.tool, s.change, (s.findings as J[]).map((f) => h('div', {}, `${f.kind ?? ''} ${f.detail ?? JSON.stringify(f)}`)), s.held ?? ''])));
    } catch (e) { add(planOut, errorBox(e instanceof ApiError ? e.problem : e)); }
  }
}

export async function policiesPage(main: HTMLElement): Promise<void> {
  add(main, h('h1', {}, 'Policies'));
  try {
    const p = await api<J>('GET', '/v1/policies');
    const lintOut = h('div', { 'aria-live': 'polite' });
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'Version'), h('dd', {}, String(p.version)), h('dt', {}, 'Digest'), h('dd', {}, digest(p.digest))),
      (p.policies as J[]).length === 0 ? h('p', {}, 'No policy is in force.') :
        (p.policies as J[]).map((x) => h('details', {}, h('summary', {}, x.name, ' ', digest(x.id), ' applies to ', (x.applies_to ?? []).join(', ')),
          h('div', { class: 'actions' }, h('button', { type: 'button', onclick: async () => {
            clear(lintOut);
            try { add(lintOut, h('h3', {}, `Lint of ${x.name}`), pre(await api<J>('POST', '/v1/policies/lint', { smtlib: x.smtlib, bind: x.bind, allow: x.allow, applies_to: x.applies_to }))); } catch (e) { add(lintOut, errorBox(e instanceof ApiError ? e.problem : e)); }
          } }, 'Lint')),
          h('pre', { class: 'json', tabindex: 0 }, x.smtlib))),
      lintOut);
    if (p.version > 0) {
      const vs = h('ul', {});
      for (let v = p.version; v >= Math.max(1, p.version - 9); v--) add(vs, h('li', {}, h('a', { href: `/ui/policies/versions/${v}` }, `version ${v}`)));
      add(main, section('Versions', vs));
    }
  } catch (e) { fail(main, e); }
}

export async function policyVersionPage(main: HTMLElement, n: string): Promise<void> {
  add(main, h('h1', {}, `Policy set version ${n}`));
  try { add(main, pre(await api<J>('GET', `/v1/policies/versions/${enc(n)}`))); } catch (e) { fail(main, e); }
}

export const fuzzPage = (main: HTMLElement) => listPage(main, 'Fuzz runs', '/v1/fuzz/runs', 'runs', 'No fuzz run is stored.',
  ['Run', 'State', 'Registry version', 'Seed', 'Seconds', 'Started'], (x) => [
    h('a', { href: `/ui/fuzz/${x.id}` }, `#${x.id}`), x.state, String(x.version), String(x.seed), String(x.seconds), x.started]);

export async function fuzzRunPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, `Fuzz run #${id}`));
  try {
    const r = await api<J>('GET', `/v1/fuzz/runs/${enc(id)}`);
    const findings = (r.report?.findings ?? []) as J[];
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'State'), h('dd', {}, r.state), h('dt', {}, 'Registry'), h('dd', {}, `version ${r.version} `, digest(r.registry))),
      section('Findings', findings.length === 0 ? h('p', {}, 'No finding.') :
        table(['Kind', 'Capability', 'Rule', 'Field', 'Detail'], findings.map((f) => [f.kind, f.capability, f.rule ?? '', f.field ?? '', f.detail]))));
  } catch (e) { fail(main, e); }
}

export function homePage(main: HTMLElement): void {
  add(main, h('h1', {}, 'groundgate'),
    h('p', { class: 'lede' }, 'A gateway that verifies what an agent runs: discovery evidence, the gate Γ, content-addressed footprints you can replay and diff.'),
    h('ul', { class: 'cards' },
      [['/ui/discover', 'Discover', 'Words → capabilities, then ground a request and execute it'],
        ['/ui/executions', 'Executions', 'Grids, heat maps, equity curves, layers, replay, diff'],
        ['/ui/registry', 'Registry', 'Entries, versions and their diffs'],
        ['/ui/sessions', 'Sessions', 'Timelines of turns and calls (admin)'],
        ['/ui/upstreams', 'Upstreams', 'Tools, drift and quarantine, sync plans'],
        ['/ui/policies', 'Policies', 'The policy set, versions and lint'],
        ['/ui/fuzz', 'Fuzz runs', 'Registry fuzzing and its findings']].map(([href, t, d]) =>
        h('li', {}, h('a', { href }, t), h('p', {}, d)))));
}

