// Discovery, grounding and the failures' advice.
import { api, ApiError, Discovery, enc, Failure, Grounding, Match } from './api';
import { badge, clear, digest, errorBox, fmt, add, h, pre, section, table } from './dom';
import { go } from './router';

// What to do about each failure code (docs/failures.md, shortened).
export const ADVICE: Record<string, string> = {
  F1: 'Fix the request document: the detail names the field and the expected shape.',
  F2: 'The name is not in the registry (names are case-sensitive): use a discovered name.',
  F3: 'The capability exists but the researcher’s words did not discover it: choose among the discovered ones, or ask the researcher.',
  F4: 'The metric was not discovered from the researcher’s words: choose a discovered metric, or ask.',
  F5: 'Partially grounded: fix the part that is not (see the other code).',
  F6: 'A parameter is out of bounds (negative, leverage over the bound, data outside the data root).',
  F7: 'The evidence names a capability whose identity has changed: run discovery again.',
  F8: 'The evidence is not genuine: use a discovery id this server issued.',
  F9: 'A precondition does not hold: change the parameter the clause reads and ground again.',
  F10: 'A postcondition failed: do not retry that grid point; change the parameter the message points at.',
  F11: 'A policy forbids it: change the value the witness names (or narrow the grid) and ground again.',
  F12: 'The upstream declares the tool differently now: it is quarantined until an admin syncs.',
};

// failureTable shows failures as a grounding's decision or a refused
// session call's record gives them: code, field, value, detail (with the
// policy and its rules, and the call to make first), what to do.
export function failureTable(failures: Failure[]): HTMLElement {
  return table(['Code', 'Field', 'Value', 'Detail', 'What to do'], failures.map((f) => [
    h('span', { class: 'code-badge' }, f.code), h('code', {}, f.field), fmt(f.value),
    h('span', {}, f.detail, f.policy ? [' (policy ', h('a', { href: '/ui/policies' }, f.policy), f.core?.length ? ': ' + f.core.join(', ') : '', ')'] : null,
      f.next ? [' — first call ', h('code', {}, `${f.next.tool} ${JSON.stringify(f.next.arguments)}`)] : null),
    ADVICE[f.code] ?? '']));
}

const TIERS = ['exact', 'alias', 'tag', 'keyword', 'relevance'];

export function renderDiscovery(d: Discovery): HTMLElement {
  const byTier = new Map<string, Match[]>();
  for (const m of d.matches) byTier.set(m.mode, [...(byTier.get(m.mode) ?? []), m]);
  const tiers = [...TIERS.filter((t) => byTier.has(t)), ...[...byTier.keys()].filter((t) => !TIERS.includes(t))];
  return h('div', { class: 'discovery' },
    h('dl', { class: 'facts' },
      h('dt', {}, 'Evidence id'), h('dd', {}, digest(d.id, `/ui/discoveries/${d.id}`)),
      h('dt', {}, 'Registry'), h('dd', {}, `version ${d.version} `, digest(d.registry, `/ui/registry/versions/${d.version}`)),
      h('dt', {}, 'Terms read'), h('dd', {}, d.terms.length ? d.terms.map((t) => h('span', { class: 'chip' }, t)) : '—'),
      h('dt', {}, 'Unresolved words'), h('dd', { class: 'unresolved' }, d.unresolved?.length ? [d.unresolved.map((t) => h('span', { class: 'chip warn' }, t)), h('span', { class: 'muted' }, ' terms that matched no capability')] : 'none')),
    tiers.length === 0 ? h('p', {}, 'No capability matched.') :
      tiers.map((t) => h('div', { class: 'tier' },
        h('h3', {}, `Tier: ${t}`),
        table(['Term', 'Capability', 'Kind', 'Confidence', 'Identity'], byTier.get(t)!.map((m) => [
          m.term, h('a', { href: `/ui/registry/capabilities/${enc(m.name)}` }, m.name), m.kind,
          h('span', { class: 'conf' }, h('meter', { min: 0, max: 1, value: m.confidence, 'aria-label': `confidence of ${m.name}` }), ' ', m.confidence.toFixed(2)),
          digest(m.capability)])))));
}

// suggest builds a request from a discovery: its first family and metric.
function suggest(d: Discovery): Record<string, unknown> {
  const fam = d.matches.find((m) => m.kind === 'family');
  const met = d.matches.find((m) => m.kind === 'metric');
  return { family: fam?.name ?? '', metric: met?.name ?? '', params: { window: [25, 50, 100] }, data: 'oil-spot/wti-daily.csv' };
}

export function groundForm(d: Discovery): HTMLElement {
  const area = h('textarea', { id: 'request', rows: 6, spellcheck: 'false', class: 'code' });
  area.value = '{\n' + Object.entries(suggest(d)).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(',\n') + '\n}';
  const out = h('div', { 'aria-live': 'polite' });
  const form = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      clear(out);
      let request: unknown;
      try { request = JSON.parse(area.value); } catch (e) { add(out, errorBox({ detail: 'the request is not JSON: ' + String(e) })); return; }
      try {
        const g = await api<Grounding>('POST', '/v1/ground', { request, discovery: d.id });
        go(`/ui/groundings/${g.id}`);
      } catch (e) {
        const g = e instanceof ApiError ? e.problem.grounding : undefined;
        if (g) go(`/ui/groundings/${g.id}`);
        else add(out, errorBox(e instanceof ApiError ? e.problem : e));
      }
    },
  },
  h('label', { for: 'request' }, 'Request (FPR) to ground against this evidence'),
  area,
  h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'ground' }, 'Ground')));
  return h('div', {}, form, out);
}

export async function discoverPage(main: HTMLElement): Promise<void> {
  const input = h('textarea', { id: 'prompt', rows: 3, placeholder: 'e.g. Run a momentum strategy on WTI crude and score it by Sharpe ratio' });
  const out = h('div', { id: 'discovery-out', 'aria-live': 'polite' });
  const form = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      clear(out);
      try {
        const d = await api<Discovery>('POST', '/v1/discover', { prompt: input.value });
        add(out, section('Discovery', renderDiscovery(d)), section('Ground a request', groundForm(d)));
      } catch (e) {
        add(out, errorBox(e instanceof ApiError ? e.problem : e));
      }
    },
  },
  h('label', { for: 'prompt' }, 'The researcher’s words'),
  input,
  h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Discover')));
  add(main, h('h1', {}, 'Discover'),
    h('p', { class: 'lede' }, 'Words → capabilities, by tier (exact name, alias, tag, keyword, relevance), with the evidence id the gate checks.'),
    form, out);
}

export async function discoveryPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, 'Discovery'));
  try {
    const d = await api<Discovery>('GET', `/v1/discoveries/${enc(id)}`);
    add(main, renderDiscovery(d), section('Ground a request', groundForm(d)));
  } catch (e) { add(main, errorBox(e instanceof ApiError ? e.problem : e)); }
}

export async function groundingPage(main: HTMLElement, id: string): Promise<void> {
  add(main, h('h1', {}, 'Grounding'));
  let g: Grounding;
  try { g = await api<Grounding>('GET', `/v1/groundings/${enc(id)}`); } catch (e) { add(main, errorBox(e instanceof ApiError ? e.problem : e)); return; }
  const ok = g.decision.admitted;
  const out = h('div', { 'aria-live': 'polite' });
  add(main, 
    h('p', { class: 'decision' }, badge(ok, 'Admitted', 'Refused'), ' ', ok ? 'The gate Γ admitted this request: it may run.' : 'The gate Γ refused this request.'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Grounding id'), h('dd', {}, digest(g.id, `/ui/groundings/${g.id}`)),
      h('dt', {}, 'Evidence'), h('dd', {}, digest(g.discovery, `/ui/discoveries/${g.discovery}`)),
      h('dt', {}, 'Registry'), h('dd', {}, `version ${g.registry_version} `, digest(g.registry, `/ui/registry/versions/${g.registry_version}`)),
      h('dt', {}, 'Policies'), h('dd', {}, digest(g.policies, '/ui/policies'))),
    g.decision.failures.length ? section('Failures', failureTable(g.decision.failures)) : null,
    section('Checks', table(['Check', 'Result', 'Failures'], g.decision.checks.map((c) => [c.name, badge(c.passed, 'passed', 'failed'), c.failures]))),
    section('Request', pre(g.request)),
    ok ? h('div', { class: 'actions' }, h('button', {
      type: 'button', id: 'execute',
      onclick: async (ev: Event) => {
        const b = ev.currentTarget as HTMLButtonElement;
        b.disabled = true; b.textContent = 'Executing…';
        clear(out);
        try {
          const fp = await api<{ hash: string }>('POST', '/v1/executions', { grounding: g.id });
          go(`/ui/executions/${fp.hash}`);
        } catch (e) { add(out, errorBox(e instanceof ApiError ? e.problem : e)); b.disabled = false; b.textContent = 'Execute'; }
      },
    }, 'Execute')) : null,
    out);
}
