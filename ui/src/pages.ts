// Registry, diffs, sessions, gateway, policies and fuzzing.
import { api, ApiError, askToken, Diff, enc, LAYERS } from './api';
import { badge, clear, digest, errorBox, fmt, add, h, pre, section, table } from './dom';
import { failureTable } from './flow';
import { go, render } from './router';

type J = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// fail shows why a page or an action failed; when it was the admin token
// that was missing (its form dismissed), a button opens the form again and
// then retries.
function failBox(e: unknown, retry: () => void): HTMLElement {
  if (e instanceof ApiError && e.problem.type === 'ui' && e.status === 401) {
    return h('p', { class: 'notice', role: 'note' }, 'This needs the admin token. ',
      h('button', { type: 'button', class: 'linkish', onclick: async () => { if (await askToken('Enter it to continue.')) retry(); } }, 'Enter the admin token'),
      ' (kept in this page’s memory only).');
  }
  return errorBox(e instanceof ApiError ? e.problem : e);
}
const fail = (main: HTMLElement, e: unknown) => add(main, failBox(e, () => void render()));

// registryPage lists the entries a page at a time (GET /v1/registry's
// limit and after cursor; the next pages stay on the first's version).
// The filter narrows the entries loaded so far.
const REGISTRY_PAGE = 200;
export async function registryPage(main: HTMLElement): Promise<void> {
  add(main, h('h1', {}, 'Registry'));
  let reg: J;
  try { reg = await api<J>('GET', `/v1/registry?limit=${REGISTRY_PAGE}`); } catch (e) { fail(main, e); return; }
  const caps = reg.capabilities as J[];
  const filter = h('input', { id: 'cap-filter', type: 'search', placeholder: 'filter by name', autocomplete: 'off' });
  const kindSel = h('select', { id: 'cap-kind' }, h('option', { value: '' }, 'every kind'));
  const kinds = new Set<string>();
  const list = h('div', { id: 'cap-list' });
  const more = h('div', { class: 'actions' });
  let next: string | undefined = reg.next;
  const draw = () => {
    for (const c of caps) kinds.add(c.kind);
    const have = new Set([...kindSel.options].map((o) => o.value));
    for (const k of [...kinds].sort()) if (!have.has(k)) add(kindSel, h('option', { value: k }, k));
    clear(list);
    const f = filter.value.toLowerCase(), k = kindSel.value;
    const rows = caps.filter((c) => (!k || c.kind === k) && (c.name as string).toLowerCase().includes(f));
    add(list, table(['Name', 'Kind', 'Identity', 'Description'], rows.map((c) => [
      h('a', { href: `/ui/registry/capabilities/${enc(c.name)}` }, c.name), c.kind, digest(c.identity), c.disc?.description ?? c.description ?? '']),
    `${rows.length} of the ${caps.length} entries loaded${next ? '; more follow (load them to filter them too)' : ''}`));
    clear(more);
    if (next) add(more, h('button', { type: 'button', id: 'more-entries', onclick: async () => {
      try {
        const page = await api<J>('GET', next!);
        caps.push(...(page.capabilities as J[]));
        next = page.next;
        draw();
        (list.querySelector(`tbody tr:nth-child(${caps.length - (page.capabilities as J[]).length + 1}) a`) as HTMLElement | null)?.focus();
      } catch (e) { add(more, failBox(e, () => undefined)); }
    } }, `Next ${REGISTRY_PAGE} entries`));
  };
  filter.addEventListener('input', draw); kindSel.addEventListener('change', draw);
  add(main,
    h('dl', { class: 'facts' }, h('dt', {}, 'Version'), h('dd', {}, String(reg.version)), h('dt', {}, 'Registry hash'), h('dd', {}, digest(reg.registry))),
    section('Entries', h('div', { class: 'controls' }, h('label', { for: 'cap-filter' }, 'Name'), ' ', filter, ' ', h('label', { for: 'cap-kind' }, 'Kind'), ' ', kindSel), list, more),
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
        return [name, digest(l.a), digest(l.b), badge(l.same, 'same', 'changed'), l.same ? '' : changes(l, d)];
      })));
  } catch (e) { fail(main, e); }
}

// changes summarises what a diff layer reports inside it.
function changes(l: J, d: Diff): HTMLElement {
  const out = h('div', { class: 'changes' });
  if (Array.isArray(l.request)) add(out, ...l.request.map((r: J) => h('div', {}, h('code', {}, r.pointer), `: ${fmt(r.a)} → ${fmt(r.b)}`)));
  if (Array.isArray(l.morphisms)) {
    const ms = l.morphisms as J[];
    // Scores of two metrics are not comparable: say so rather than let
    // "0.009 → 0.15" read as an improvement.
    const req = (d.layers.find((x) => x.layer === 'request')?.request ?? []) as J[];
    const metric = req.find((r) => r.pointer === '/metric');
    add(out, h('div', {}, `${ms.length} morphisms’ scores differ`, metric ? ` (A scored by ${fmt(metric.a)}, B by ${fmt(metric.b)}: not comparable)` : ''),
      ...ms.slice(0, 5).map((m) => h('div', {}, `#${m.index}: ${fmt(m.a)} → ${fmt(m.b)}`)), ms.length > 5 ? h('div', { class: 'muted' }, `… and ${ms.length - 5} more (GET /v1/diff/…)`) : null);
  }
  if (l.selection) {
    const sel = l.selection as J;
    const one = (x: string, hash: unknown, i: unknown) => i === null || i === undefined ? h('span', { class: 'muted' }, 'none') :
      h('span', {}, h('a', { href: `/ui/executions/${x}` }, `morphism #${i}`), ' ', digest(hash as string));
    add(out, h('div', {}, 'selected ', one(d.a, sel.a, sel.index_a), ' → ', one(d.b, sel.b, sel.index_b)));
  }
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

// when shows a timestamp to the millisecond, the whole one in its title.
const when = (at: string) => h('time', { class: 'when', datetime: at, title: at }, at.replace('T', ' ').replace(/(\.\d{3})\d*/, '$1'));

export async function sessionPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, 'Session'));
  try {
    const s = await api<J>('GET', `/v1/sessions/${enc(id)}`, undefined, 'Reading a session needs the admin token (or the session’s own).');
    type Ev = { at: string; el: HTMLElement };
    const evs: Ev[] = [];
    for (const t of s.turns as J[]) evs.push({ at: t.at, el: h('li', { class: 'turn' },
      when(t.at), h('span', { class: 'kind' }, `Turn ${t.seq} (${t.by})`),
      h('blockquote', {}, t.prompt), h('div', {}, 'evidence ', digest(t.evidence, `/ui/discoveries/${t.evidence}`), t.facts ? [' facts ', h('code', {}, JSON.stringify(t.facts))] : null)) });
    for (const c of s.calls as J[]) {
      const ok = c.decision === 'admitted';
      evs.push({ at: c.at, el: h('li', { class: ok ? 'call' : 'call refused' },
        when(c.at), h('span', { class: 'kind' }, `Call ${c.seq}: `, h('code', {}, c.tool)), ' ', badge(ok, 'admitted', c.decision),
        c.outcome ? h('div', {}, `outcome ${c.outcome}`, (c.filed as J[] ?? []).length ? ['; filed as ', (c.filed as J[]).map((f, i) => [i ? ', ' : '', h('code', {}, `${f.tool}[${f.key}]`)])] : '', c.unfiled ? `; not filed: ${c.unfiled}` : '') : null,
        ok ? null : h('div', {}, 'refused by Γ before it reached the upstream: nothing ran and the state is unchanged. Its request ', digest(c.request),
          (c.failures as J[] | undefined)?.length ? h('div', { class: 'failures' }, failureTable(c.failures))
            : h('div', { class: 'muted' }, 'This record predates kept failures: why it was refused was only the 422 answer to that call.')),
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
  try {
    const c = await api<J>('GET', `/v1/calls/${enc(hash)}`, undefined, 'Reading a call’s footprint needs the admin token.');
    const layers = c.layers as J;
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'Call hash'), h('dd', {}, digest(c.hash)), h('dt', {}, 'Tool'), h('dd', {}, c.tool ?? '')),
      section('Layers', table(['Layer', 'Digest'], Object.entries(layers ?? {}).map(([k, v]) => [k, h('code', { class: 'digest full' }, String(v))]))),
      section('Footprint', pre(c)));
  } catch (e) { fail(main, e); }
}

// listPage shows the list at path's field key as a table, one row per
// item, following the API's next link a page at a time.
async function listPage(main: HTMLElement, title: string, path: string, key: string, empty: string, headers: string[], row: (x: J) => (Node | string)[]): Promise<void> {
  add(main, h('h1', {}, title));
  try {
    const first = await api<J>('GET', path);
    const items = first[key] as J[];
    if (items.length === 0) { add(main, h('p', {}, empty)); return; }
    const t = table(headers, items.map(row));
    const more = h('div', { class: 'actions' });
    const moreButton = (next: string | undefined) => {
      clear(more);
      if (next) add(more, h('button', { type: 'button', onclick: async () => {
        try {
          const page = await api<J>('GET', next);
          for (const x of page[key] as J[]) add(t.tBodies[0], h('tr', {}, row(x).map((c) => h('td', {}, c))));
          moreButton(page.next);
        } catch (e) { add(more, failBox(e, () => undefined)); }
      } }, 'More'));
    };
    add(main, t, more);
    moreButton(first.next);
  } catch (e) { fail(main, e); }
}

export const upstreamsPage = (main: HTMLElement) => listPage(main, 'Upstreams', '/v1/upstreams?limit=100', 'upstreams', 'No upstream is configured.',
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
      const p = await api<J>('POST', `/v1/upstreams/${enc(name)}/sync`, { apply }, `${apply ? 'Applying' : 'Planning'} a sync of ${name} needs the admin token.`);
      add(planOut, h('p', {}, p.applied ? `Applied as registry version ${p.version}.` : 'Plan (nothing written):'),
        table(['Tool', 'Change', 'Findings', 'Held'], (p.plan as J[]).map((s) => [s.tool, s.change, (s.findings as J[]).map((f) => h('div', {}, `${f.kind ?? ''} ${f.detail ?? JSON.stringify(f)}`)), s.held ?? ''])));
    } catch (e) { add(planOut, failBox(e, () => void sync(apply))); }
  }
}

// lintTable shows a lint report check by check (docs/policies.md).
function lintTable(r: J): HTMLElement {
  const list = (xs: unknown[], f: (x: J) => string = String) => xs.length === 0 ? badge(true, 'none', '') : h('ul', {}, (xs as J[]).map((x) => h('li', {}, f(x))));
  return h('div', {}, h('h3', {}, `Lint of ${r.policy}: `, badge(r.clean, 'clean', 'something to look at')),
    table(['Check', 'Result', 'Meaning'], [
      ['vacuous', badge(!r.vacuous, 'no', 'yes'), 'no request the policy governs is admitted'],
      ['tautological', badge(!r.tautological, 'no', 'yes'), 'no request the policy governs is refused'],
      ['redundant', list(r.redundant), 'named assertions the others imply'],
      ['unbound', list(r.unbound), 'declared constants no pointer binds'],
      ['conflicts', list(r.conflicts, (c) => `with ${c.with}: ${c.detail}`), 'policies in force that, with this one, refuse every request both govern'],
      ['undecided', list(r.undecided), 'questions the solver could not decide']]));
}

// binds lists a policy's constants and what gives each its value, the
// expressions shortened (the SMT-LIB and GET /v1/policies have them whole).
function binds(m: Record<string, string> | undefined, what: string): HTMLElement {
  const es = Object.entries(m ?? {});
  if (es.length === 0) return h('span', { class: 'muted' }, 'none');
  return h('div', {}, es.map(([k, v]) => h('div', { title: v }, h('code', {}, k), ` ← ${what} `, h('code', {}, v.length > 90 ? v.slice(0, 90) + '…' : v))));
}

export async function policiesPage(main: HTMLElement): Promise<void> {
  add(main, h('h1', {}, 'Policies'));
  try {
    const p = await api<J>('GET', '/v1/policies');
    const lintOut = h('div', { id: 'lint-out', 'aria-live': 'polite' });
    add(main, h('dl', { class: 'facts' }, h('dt', {}, 'Version'), h('dd', {}, String(p.version)), h('dt', {}, 'Digest'), h('dd', {}, digest(p.digest)),
      h('dt', {}, 'Policies'), h('dd', {}, `${(p.policies as J[]).length} in force; open one for its SMT-LIB and to lint it`)),
    (p.policies as J[]).length === 0 ? h('p', {}, 'No policy is in force.') :
      (p.policies as J[]).map((x) => h('details', { class: 'policy' }, h('summary', {}, h('strong', {}, x.name), ' ', digest(x.id), ' applies to ', (x.applies_to ?? []).map((t: string) => h('code', {}, t))),
        h('dl', { class: 'facts' }, h('dt', {}, 'Admits when'), h('dd', {}, h('code', {}, x.allow ?? '')),
          h('dt', {}, 'Binds'), h('dd', {}, binds(x.bind, 'JSON pointer')),
          x.derive ? [h('dt', {}, 'Derives'), h('dd', {}, binds(x.derive, 'CEL'))] : null),
        h('pre', { class: 'json', tabindex: 0 }, x.smtlib),
        h('div', { class: 'actions' }, h('button', { type: 'button', class: 'lint', onclick: async () => {
          clear(lintOut);
          // The policy as it was written (every field but its name and id:
          // a derived constant left out would read as unbound).
          const { name: _n, id: _i, ...body } = x; // eslint-disable-line @typescript-eslint/no-unused-vars
          try { add(lintOut, lintTable(await api<J>('POST', `/v1/policies/lint?name=${enc(x.name)}`, body))); } catch (e) { add(lintOut, failBox(e, () => undefined)); }
        } }, `Lint ${x.name}`)))),
    lintOut);
    if (p.version > 0) {
      const vs = h('ul', {});
      for (let v = p.version; v >= Math.max(1, p.version - 9); v--) add(vs, h('li', {}, h('a', { href: `/ui/policies/versions/${v}` }, `version ${v}`), v === p.version ? ' (in force)' : ''));
      add(main, section('Versions', h('p', {}, 'Each write (a policy added, replaced or removed) makes a new version of the set; a grounding names the version it was decided under.'), vs));
    }
  } catch (e) { fail(main, e); }
}

export async function policyVersionPage(main: HTMLElement, n: string): Promise<void> {
  add(main, h('h1', {}, `Policy set version ${n}`));
  try { add(main, pre(await api<J>('GET', `/v1/policies/versions/${enc(n)}`))); } catch (e) { fail(main, e); }
}

// The fuzz runs (the newest 100 are kept), and a form starting one: an
// admin action, so without the token it opens the token form.
export async function fuzzPage(main: HTMLElement): Promise<void> {
  const seconds = h('input', { id: 'fuzz-seconds', type: 'number', min: 1, max: 600, value: 5, size: 5 });
  const seed = h('input', { id: 'fuzz-seed', type: 'number', min: 0, value: 1, size: 8 });
  const out = h('div', { 'aria-live': 'polite' });
  await listPage(main, 'Fuzz runs', '/v1/fuzz/runs', 'runs', 'No fuzz run is stored.',
    ['Run', 'State', 'Progress', 'Registry version', 'Seed', 'Seconds', 'Started'], (x) => [
      h('a', { href: `/ui/fuzz/${x.id}` }, `#${x.id}`), badge(x.state !== 'failed', x.state, x.state), `${x.progress?.done ?? 0} of ${x.progress?.total ?? '?'}`,
      String(x.version), String(x.seed), String(x.seconds), x.started]);
  add(main, section('Start a run',
    h('p', {}, 'A run asks the discovery index of the current registry version questions for at most the seconds given, and reports what it finds (docs/fuzzing.md). One runs at a time; starting one needs the admin token.'),
    h('form', { class: 'controls', onsubmit: async (ev: Event) => {
      ev.preventDefault();
      clear(out);
      try {
        const r = await api<J>('POST', '/v1/fuzz/runs', { seconds: Number(seconds.value), seed: Number(seed.value) }, 'Starting a fuzz run needs the admin token.');
        go(`/ui/fuzz/${r.id}`);
      } catch (e) { add(out, failBox(e, () => void render())); }
    } }, h('label', { for: 'fuzz-seconds' }, 'Seconds'), ' ', seconds, ' ', h('label', { for: 'fuzz-seed' }, 'Seed'), ' ', seed, ' ',
    h('button', { type: 'submit', id: 'fuzz-start' }, 'Start')), out));
}

// fuzzRunPage shows a run, polled while it runs, and once it has ended its
// report's findings (the API's `result`).
export async function fuzzRunPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, `Fuzz run #${id}`));
  const path = location.pathname;
  try {
    let r = await api<J>('GET', `/v1/fuzz/runs/${enc(id)}`);
    const status = h('div', { 'aria-live': 'polite' });
    add(main, status);
    for (;;) {
      clear(status);
      add(status, h('dl', { class: 'facts' },
        h('dt', {}, 'State'), h('dd', { id: 'fuzz-state' }, badge(r.state !== 'failed', r.state, r.state), r.detail ? ' ' + r.detail : ''),
        h('dt', {}, 'Progress'), h('dd', {}, `${r.progress?.done ?? 0} of ${r.progress?.total ?? '?'} questions`),
        h('dt', {}, 'Registry'), h('dd', {}, `version ${r.version} `, digest(r.registry)),
        h('dt', {}, 'Seed, seconds'), h('dd', {}, `${r.seed}, at most ${r.seconds} s${r.runtime ? ', with the runtime tests' : ''}`),
        h('dt', {}, 'Started'), h('dd', {}, r.started, r.finished ? ` · ended ${r.finished}` : ''),
        r.result_digest ? [h('dt', {}, 'Report digest'), h('dd', {}, digest(r.result_digest))] : null));
      if (r.state !== 'running' || location.pathname !== path) break;
      add(status, h('div', { class: 'actions' }, h('button', { type: 'button', id: 'fuzz-cancel', onclick: async () => {
        try { await api<J>('DELETE', `/v1/fuzz/runs/${enc(id)}`, undefined, 'Cancelling a fuzz run needs the admin token.'); } catch (e) { add(status, failBox(e, () => undefined)); }
      } }, 'Cancel the run')));
      await new Promise((f) => setTimeout(f, 500));
      if (location.pathname !== path) return;
      r = await api<J>('GET', `/v1/fuzz/runs/${enc(id)}`);
    }
    const rep = r.result as J | undefined;
    if (!rep) { add(main, h('p', {}, r.state === 'failed' ? 'The run failed: it has no report.' : 'No report.')); return; }
    const findings = (rep.findings ?? []) as J[];
    const byKind = new Map<string, number>();
    for (const f of findings) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
    add(main,
      h('p', { id: 'fuzz-summary' }, `${findings.length} finding${findings.length === 1 ? '' : 's'}`,
        byKind.size ? ` (${[...byKind].map(([k, n]) => `${n} ${k}`).join(', ')})` : '',
        ` from ${rep.asked} of ${rep.probes} questions${rep.complete ? '' : ': the run was cut short, so these cover the questions asked'}; tests: ${(rep.tests ?? []).join(', ')}.`),
      section('Findings', findings.length === 0 ? h('p', {}, 'No finding.') :
        table(['Kind', 'Capability', 'Rule', 'Where', 'Detail'], findings.map((f) => [f.kind,
          h('a', { href: `/ui/registry/capabilities/${enc(f.capability)}` }, f.capability), h('code', {}, f.rule ?? ''),
          f.other ? ['beside ', h('a', { href: `/ui/registry/capabilities/${enc(f.other)}` }, f.other)] : f.field ?? '',
          [f.detail, (f.examples ?? []).length ? h('div', { class: 'muted' }, 'e.g. ', (f.examples as string[]).slice(0, 3).map((x) => `“${x}”`).join(', ')) : null]]),
        `${findings.length} findings, each with its id (the same finding has the same id in every run)`)),
      (rep.suggestions ?? []).length ? section('Suggestions', h('p', {}, `${rep.suggestions.length} discovery-layer patches answering the findings:`), pre(rep.suggestions)) : null);
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

