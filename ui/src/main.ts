import './style.css';
import { hasToken, onToken, setToken } from './api';
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

// The admin token: asked for in a form, kept in memory (api.ts), never
// put in a URL or in storage; a reload forgets it.
const auth = document.getElementById('auth')!;
function drawAuth(): void {
  clear(auth);
  if (hasToken()) {
    add(auth, h('span', { class: 'badge ok', id: 'admin-state' }, 'admin'), ' ',
      h('button', { type: 'button', class: 'small', onclick: () => { setToken(null); void render(); } }, 'Forget token'));
    return;
  }
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', size: 18 });
  const form = h('form', { class: 'token-form', hidden: true, onsubmit: (ev: Event) => { ev.preventDefault(); setToken(input.value); input.value = ''; void render(); } },
    h('label', { for: 'token' }, 'Admin token'), ' ', input, ' ', h('button', { type: 'submit', class: 'small' }, 'Use'));
  const open = h('button', { type: 'button', class: 'small', id: 'token-button', 'aria-expanded': 'false', onclick: () => { form.hidden = false; open.hidden = true; input.focus(); } }, 'Admin token');
  add(auth, open, form);
}
onToken(drawAuth);
drawAuth();
start();
