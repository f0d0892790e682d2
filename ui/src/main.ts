import './style.css';
import { askToken, hasToken, onAskToken, onToken, setToken } from './api';
import { clear, add, h } from './dom';
import { executionPage } from './execution';
import { discoverPage, discoveryPage, groundingPage } from './flow';
import * as p from './pages';
import { render, route, start } from './router';

route('/', p.homePage);
route('/discover', discoverPage);
route('/discoveries/:id', discoveryPage);
route('/groundings/:id', groundingPage);
route('/executions', p.executionsPage);
route('/executions/:hash', executionPage);
route('/diff/:a/:b', p.diffPage);
route('/registry', p.registryPage);
route('/registry/capabilities/:name', p.capabilityPage);
route('/registry/versions/:n', p.versionPage);
route('/registry/diff/:a/:b', p.registryDiffPage);
route('/sessions', p.sessionsPage);
route('/sessions/:id', p.sessionPage);
route('/calls/:hash', p.callPage);
route('/upstreams', p.upstreamsPage);
route('/upstreams/:name', p.upstreamPage);
route('/policies', p.policiesPage);
route('/policies/versions/:n', p.policyVersionPage);
route('/fuzz', p.fuzzPage);
route('/fuzz/:id', p.fuzzRunPage);

const nav = document.getElementById('nav')!;
add(nav, h('ul', {}, [['/ui/discover', 'Discover'], ['/ui/executions', 'Executions'], ['/ui/registry', 'Registry'], ['/ui/sessions', 'Sessions'],
  ['/ui/upstreams', 'Upstreams'], ['/ui/policies', 'Policies'], ['/ui/fuzz', 'Fuzz']].map(([href, t]) => h('li', {}, h('a', { href }, t)))));

// The admin token: asked for in a modal form (keyboard first: it opens
// focused on the token, Enter uses it, Escape dismisses it, focus returns
// where it was), kept in memory (api.ts), never put in a URL or in
// storage; a reload forgets it. An admin action without the token opens
// the form saying what asked for it.
const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', required: true, size: 40, spellcheck: 'false' });
const why = h('p', { id: 'token-why' });
let pending: ((ok: boolean) => void) | null = null;
const settle = (ok: boolean) => { const p = pending; pending = null; if (dialog.open) dialog.close(); input.value = ''; p?.(ok); };
const dialog = h('dialog', { id: 'token-dialog', 'aria-labelledby': 'token-title', 'aria-describedby': 'token-why' },
  h('form', { onsubmit: (ev: Event) => { ev.preventDefault(); if (!input.value) return; setToken(input.value); settle(true); } },
    h('h2', { id: 'token-title' }, 'Admin token'), why,
    h('p', { class: 'muted' }, 'It is kept in this page’s memory only: never in a URL, in storage or a cookie, or in a log; a reload forgets it.'),
    h('label', { for: 'token' }, 'Token'), input,
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'token-use' }, 'Use token'), ' ',
      h('button', { type: 'button', class: 'secondary', id: 'token-cancel', onclick: () => settle(false) }, 'Cancel'))));
dialog.addEventListener('cancel', (ev) => { ev.preventDefault(); settle(false); }); // Escape
document.body.appendChild(dialog);
onAskToken((reason) => new Promise<boolean>((resolve) => {
  if (pending) { const prev = pending; pending = (ok) => { prev(ok); resolve(ok); }; return; } // one form for concurrent asks
  pending = resolve;
  why.textContent = reason;
  dialog.showModal();
  input.focus();
}));

const auth = document.getElementById('auth')!;
function drawAuth(): void {
  clear(auth);
  if (hasToken()) {
    add(auth, h('span', { class: 'badge ok', id: 'admin-state' }, 'admin'), ' ',
      h('button', { type: 'button', class: 'small', onclick: () => { setToken(null); void render(); } }, 'Forget token'));
    return;
  }
  add(auth, h('button', { type: 'button', class: 'small', id: 'token-button', 'aria-haspopup': 'dialog', onclick: async () => {
    if (await askToken('Admin actions (registry writes, syncs, fuzz runs) and reading sessions and calls need it.')) void render();
  } }, 'Admin token'));
}
onToken(drawAuth);
drawAuth();
start();
