// The web UI's end-to-end test (tools/ui-e2e.sh starts the server and sets
// UI_E2E_*): seeds the server over the REST API as a host would, then
// drives the UI in Debian's headless chromium with playwright-core, runs
// axe-core on every page, and saves a screenshot of each.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const BASE = process.env.UI_E2E_BASE, TOKEN = process.env.UI_E2E_TOKEN, TMP = process.env.UI_E2E_TMP, REPO = process.env.UI_E2E_REPO;
const OUT = process.env.UI_E2E_ARTIFACTS;
if (!BASE || !TOKEN || !TMP || !REPO || !OUT) throw new Error('run by tools/ui-e2e.sh (UI_E2E_* unset)');
mkdirSync(OUT, { recursive: true });

let failures = 0;
function check(ok, what) {
  if (ok) { console.log(`ok   ${what}`); return; }
  failures++;
  console.log(`FAIL ${what}`);
}

// --- the host's side, over REST ---
async function rest(method, path, body, admin = false, want) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (admin) headers.Authorization = 'Bearer ' + TOKEN;
  const r = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (want !== undefined ? r.status !== want : !r.ok) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 400)}`);
  return text ? JSON.parse(text) : null;
}
const sleep = (ms) => new Promise((f) => setTimeout(f, ms));
async function connected(name) {
  for (let i = 0; i < 150; i++) {
    const u = await rest('GET', `/v1/upstreams/${name}`);
    if (u.status.connected && u.status.tools.length > 0) return u;
    await sleep(200);
  }
  throw new Error(`upstream ${name} did not connect`);
}

const HOSTILE = 'Chop <img src=x onerror="window.__xss=1"><script>window.__xss=1</script> <b>bold</b>';

// A capability whose description holds HTML and a script.
await rest('PUT', '/v1/registry/capabilities/UI_CHOP', {
  kind: 'signal',
  sem: { pure: true, deterministic: true, commutative: false, associative: false, idempotent: false, orientation: 'none', stateful: true },
  alg: { inputs: ['series'], outputs: ['series'], arity: 1, reversible: false },
  impl: { engine: 'groundgate/v1', ir: 'pipeline', fusable: false, expr: '(rmean (abs (dlog x)) 13)' },
  disc: { description: HOSTILE, aliases: ['thirteen day chop'] },
}, true);

// An upstream whose tool description holds HTML and a script; the sync
// approves the overlay's words, which carry the same text.
const state = join(TMP, 'shop-state.json');
writeFileSync(state, JSON.stringify({ tools: { echo: { description: HOSTILE } } }));
await rest('PUT', '/v1/upstreams/shop', { transport: 'stdio', command: [join(TMP, 'mcp-testupstream'), '--state', state], ground: 'writes' }, true, 201);
await connected('shop');
await rest('POST', '/v1/upstreams/shop/sync', { apply: true, overlay: { echo: { disc: { description: HOSTILE } } } }, true);

// The airline upstream, its words and policies (docs/sessions.md), and a
// session with a refused call.
const airline = JSON.parse(readFileSync(join(REPO, 'examples/airline/upstream.json'), 'utf8'));
airline.command = [join(TMP, 'airline-mcp'), '--db', join(REPO, 'airline/testdata/db')];
await rest('PUT', '/v1/upstreams/airline', airline, true, 201);
await connected('airline');
await rest('POST', '/v1/upstreams/airline/sync', { apply: true, overlay: JSON.parse(readFileSync(join(REPO, 'examples/airline/overlay.json'), 'utf8')) }, true);
for (const [name, body] of Object.entries(JSON.parse(readFileSync(join(REPO, 'examples/airline/policies.json'), 'utf8')))) {
  await rest('PUT', `/v1/policies/${name}`, body, true);
}
const sess = await rest('POST', '/v1/sessions', {
  prompt: 'Hi, I am chen_lee_6825. Please cancel my reservations YAX4DR and JW6LEQ, my plans changed.',
  facts: { cancel_reason: 'change_of_plan' },
}, true, 201);
const call = (tool, args, want) => rest('POST', `/v1/sessions/${sess.id}/calls`, { tool, arguments: args }, true, want);
await call('airline.get_reservation_details', { reservation_id: 'YAX4DR' }, 200);
await call('airline.cancel_reservation', { reservation_id: 'YAX4DR' }, 422);
await call('airline.get_reservation_details', { reservation_id: 'JW6LEQ' }, 200);
await call('airline.cancel_reservation', { reservation_id: 'JW6LEQ' }, 200);

// A short registry fuzz run (docs/fuzzing.md), to its end; the fuzz page
// shows its findings.
const fuzzRun = await rest('POST', '/v1/fuzz/runs', { seconds: 3, seed: 7 }, true, 202);
let fuzzDone = fuzzRun;
for (let i = 0; i < 300 && fuzzDone.state === 'running'; i++) { await sleep(200); fuzzDone = await rest('GET', `/v1/fuzz/runs/${fuzzRun.id}`); }
if (fuzzDone.state !== 'done') throw new Error(`fuzz run ${fuzzRun.id}: ${fuzzDone.state} ${fuzzDone.detail ?? ''}`);
const fuzzFindings = fuzzDone.result.findings;

// --- the UI, in the browser ---
// A fresh profile (playwright passes it as --user-data-dir).
const context = await chromium.launchPersistentContext(join(TMP, 'chromium-profile'), {
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1,
});
const page = context.pages()[0] ?? await context.newPage();
const urls = [];
const problems = [];
page.on('request', (r) => urls.push(r.url()));
page.on('framenavigated', (f) => urls.push(f.url()));
// Chromium logs every 4xx answer as an error: the refused grounding's 422
// is expected, nothing else is.
// A wrong token is refused with a 401 once, on purpose (allow401).
let allow401 = false;
page.on('console', (m) => {
  if (m.type() === 'error' && !/status of 422/.test(m.text()) && !(allow401 && /status of 401/.test(m.text()))) problems.push(`console: ${m.text()}`);
});
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
await context.addInitScript(() => {
  document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
});

async function ready(path) {
  await page.waitForFunction((p) => document.body.dataset.ready === p, path, { timeout: 15000 });
}
async function shot(name, full = true) {
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: full });
}
async function axe(name) {
  const res = await page.evaluate(async (src) => {
    if (!window.axe) (0, eval)(src);
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length, target: v.nodes[0]?.target }));
  }, axeSource);
  const bad = res.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  check(bad.length === 0, `axe on ${name}: 0 serious or critical violations${bad.length ? ': ' + JSON.stringify(bad) : ''} (${res.length} minor)`);
}
const text = (sel) => page.locator(sel).first().innerText();

// Home, then Discover by keyboard alone: Tab to the nav link, Enter.
await page.goto(BASE + '/ui/');
await ready('/');
await shot('home');
await axe('home');
await page.keyboard.press('Tab'); // skip link
await page.keyboard.press('Tab'); // brand
await page.keyboard.press('Tab'); // Discover
check((await page.evaluate(() => document.activeElement?.textContent)) === 'Discover', 'keyboard: Tab reaches the Discover link');
await page.keyboard.press('Enter');
await ready('/discover');
await page.keyboard.press('Tab');
check((await page.evaluate(() => document.activeElement?.id)) === 'prompt', 'keyboard: the prompt box follows');
await page.keyboard.type('Run a momentum strategy on WTI crude and score it by Sharpe ratio');
await page.keyboard.press('Tab');
await page.keyboard.press('Enter'); // the Discover button
await page.locator('#discovery-out .tier').first().waitFor();
const discText = await text('#discovery-out');
check(/Tier: alias/.test(discText) && /MOM_WZS/.test(discText) && /0\.90/.test(discText), 'discovery: matches by tier with confidence');
check(/wti/.test(await text('.unresolved')), 'discovery: unresolved words shown');
const evidence = await page.locator('#discovery-out a.digest-link').first().getAttribute('data-digest');
check(/^sha256:[0-9a-f]{64}$/.test(evidence ?? ''), `discovery: evidence id ${evidence}`);
await page.evaluate(() => document.activeElement?.blur());
await shot('discover');
await axe('discover');

// A refused grounding: MOM_REV was not discovered (F3).
await page.fill('#request', JSON.stringify({ family: 'MOM_REV', metric: 'SRP', params: { window: 50 }, data: 'oil-spot/wti-daily.csv' }));
await page.click('#ground');
await page.waitForURL(/\/ui\/groundings\//);
await ready(new URL(page.url()).pathname.slice(3));
const refused = await text('main');
check(/Refused/.test(refused) && /F3/.test(refused) && /was not discovered/.test(refused) && /What to do/.test(refused), 'grounding: refused, F3 with its reason and what to do');
await shot('grounding-refused');
await axe('grounding refused');

// The admitted 256-morphism grid: 16 windows × 16 leverages (those over
// the bound of 10 are rejected by the risk filter).
await page.goBack();
await ready(`/discover`).catch(() => {});
await page.goto(`${BASE}/ui/discoveries/${evidence}`);
await ready(`/discoveries/${evidence}`);
const grid = { family: 'MOM_WZS', metric: 'SRP', params: { window: [5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120, 150, 200, 250], leverage: [0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16] }, data: 'oil-spot/wti-daily.csv' };
await page.fill('#request', JSON.stringify(grid));
await page.keyboard.press('Tab'); // from the request to Ground
check((await page.evaluate(() => document.activeElement?.id)) === 'ground', 'keyboard: Tab from the request reaches Ground');
await page.keyboard.press('Enter');
await page.waitForURL(/\/ui\/groundings\//);
await ready(new URL(page.url()).pathname.slice(3));
check(/Admitted/.test(await text('main')), 'grounding: admitted');
await shot('grounding-admitted');
await axe('grounding admitted');
await page.focus('#execute');
await page.keyboard.press('Enter');
await page.waitForURL(/\/ui\/executions\//, { timeout: 60000 });
const execPath = new URL(page.url()).pathname;
const execHash = decodeURIComponent(execPath.split('/').pop());
await ready(execPath.slice(3));
await page.waitForSelector('#equity[data-series="1"] canvas');
check(/256 morphisms, 48 rejected/.test(await text('main')), 'execution: 256 morphisms, the 48 over the leverage bound rejected');

// Interactive within 1 s: a fresh load of the page, from navigation start
// to the mark the page sets once the heat map and the selected equity
// curve are drawn and every control answers.
const times = [];
for (let i = 0; i < 3; i++) {
  await page.goto(BASE + execPath);
  await page.waitForFunction(() => performance.getEntriesByName('execution-interactive').length > 0, null, { timeout: 10000 });
  const marks = await page.evaluate(() => Object.fromEntries(['execution-start', 'execution-footprint', 'execution-drawn', 'execution-interactive']
    .map((n) => [n, Math.round(performance.getEntriesByName(n)[0]?.startTime ?? -1)])));
  console.log(`  load ${i + 1}: ${JSON.stringify(marks)} (ms since navigation start)`);
  times.push(marks['execution-interactive']);
}
// The median of three loads: one slow load on a busy machine (CI shares
// its cores) is noise, a slow median is not.
const median = [...times].sort((a, b) => a - b)[1];
console.log(`execution page of a 256-morphism grid interactive after ${times.map((t) => t.toFixed(0)).join(', ')} ms (3 loads; median ${median.toFixed(0)} ms)`);
check(median < 1000, `execution page interactive within 1 s (median of 3 loads ${median.toFixed(0)} ms)`);
await ready(execPath.slice(3));
const heatDrawn = await page.evaluate(() => { const c = document.querySelector('canvas.heat'); return c && c.width > 100 && c.height > 100; });
check(heatDrawn, 'heat map drawn');

// Click a heat map cell: its curve joins the selected one.
const box = await page.locator('canvas.heat').boundingBox();
await page.mouse.click(box.x + 4 + 70 + 28 * 2 + 10, box.y + 4 + 8 + 28 * 3 + 10); // the wrap's padding 4, PADL 70, PADT 8, CELL 28
await page.waitForSelector('#equity[data-series="2"]');
check((await page.locator('#equity-legend li').count()) === 2, 'equity: a clicked morphism is drawn beside the selected');
// The keyboard does the same: focus the map, arrows, Enter.
await page.focus('.heat-wrap');
await page.keyboard.press('ArrowRight');
await page.keyboard.press('ArrowRight');
await page.keyboard.press('ArrowUp');
await page.keyboard.press('Enter');
await page.waitForSelector('#equity[data-series="3"]');
check(/morphism #/.test(await text('#heat-cell')), 'keyboard: the heat map is navigable and picks a morphism');
// The screenshots without the keyboard's focus ring around the map.
await page.evaluate(() => document.activeElement?.blur());
await shot('execution');
await page.locator('section[aria-labelledby="sec-heat-map"]').screenshot({ path: join(OUT, 'heat-map.png') });
await page.locator('section[aria-labelledby="sec-equity-curves"]').screenshot({ path: join(OUT, 'equity.png') });
await axe('execution');

// Replay: every layer matched.
await page.focus('#replay');
await page.keyboard.press('Enter');
await page.waitForSelector('#replay-result', { timeout: 60000 });
check(/Every layer matched/.test(await text('#replay-result')) && (await page.locator('#replay-out tbody tr').count()) === 8, 'replay: every one of the eight layers matched');
await page.click('#verify');
await page.waitForSelector('#verify-result, #attestation-out .error');
check(/Verified/.test(await text('#attestation-out')), 'attestation verified in the browser (Ed25519, DSSE)');
await page.locator('#sec-replay').scrollIntoViewIfNeeded();
await shot('replay', false);

// Diff with the same grid ranked by turnover: request, score, selection.
const d2 = await rest('POST', '/v1/discover', { prompt: 'Momentum on WTI crude, ranked by turnover' });
const g2 = await rest('POST', '/v1/ground', { request: { ...grid, metric: 'TRN' }, discovery: d2.id });
const e2 = await rest('POST', '/v1/executions', { grounding: g2.id }, false, 201);
await page.fill('#diff-with', e2.hash);
await page.press('#diff-with', 'Enter');
await page.waitForURL(/\/ui\/diff\//);
await ready(new URL(page.url()).pathname.slice(3));
const diffText = await text('#diff-summary');
check(/Changed: request, score, selection/.test(diffText), `diff: ${diffText}`);
check(/\/metric/.test(await text('main')), 'diff: the request field that changed, by JSON pointer');
await shot('diff');
await axe('diff');

// A session needs the admin token: its page opens the token form, focused
// on the token. Escape dismisses it (the page says what is missing and
// offers the form again); a wrong token is refused by the server and the
// form asks again; the right one shows the timeline. Keyboard only.
await page.click('#nav >> text=Sessions');
await ready('/sessions');
await page.fill('#session-id', sess.id);
await page.press('#session-id', 'Enter');
await page.waitForSelector('#token-dialog[open]');
check((await page.evaluate(() => document.activeElement?.id)) === 'token' && /Reading a session/.test(await text('#token-why')),
  'token form: a session without the token opens it, focused, saying what asked');
await shot('token-form', false);
await axe('token form');
await page.keyboard.press('Escape');
await ready(`/sessions/${sess.id}`);
check(!(await page.locator('#token-dialog[open]').count()) && /needs the admin token/.test(await text('main')), 'token form: Escape dismisses it; the page says the token is needed');
await page.focus('main .notice button');
await page.keyboard.press('Enter');
await page.waitForSelector('#token-dialog[open]');
allow401 = true;
await page.keyboard.type('not-the-token');
await page.keyboard.press('Enter');
await page.waitForFunction(() => document.querySelector('#token-dialog')?.open && document.activeElement?.id === 'token' && !document.querySelector('#admin-state'));
check(true, 'token form: a wrong token is refused and the form asks again');
await page.keyboard.type(TOKEN);
await page.keyboard.press('Enter');
await ready(`/sessions/${sess.id}`);
allow401 = false;
await page.waitForSelector('#admin-state');
const tl = await text('#timeline');
check((await page.locator('#timeline li.refused').count()) === 1 && /Turn 0 \(host\)/.test(tl) && (await page.locator('#timeline li.call').count()) === 4, 'session: a timeline of the turn and four calls, one refused');
check(/^sha256:[0-9a-f]{64}$/.test(await text('#state-digest')), 'session: the state digest');
const why = await text('#timeline li.refused');
check(/F11/.test(why) && /policy/.test(why) && /What to do/.test(why), 'session: the refused call shows why (its F-code, the policy and its rules, what to do)');
await shot('session');
await axe('session');
// A call's footprint from the timeline: its seven layers.
await page.click('#timeline a[href^="/ui/calls/"]');
await page.waitForURL(/\/ui\/calls\//);
await ready(new URL(page.url()).pathname.slice(3));
check((await page.locator('section[aria-labelledby="sec-layers"] tbody tr').count()) === 7, 'call: its seven layers');
await axe('call');
const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
check(!stored.includes(TOKEN), 'the token is in no storage or cookie');

// HTML in a capability's and in an upstream tool's description is text.
await page.click('#nav >> text=Registry');
await ready('/registry');
{
  const whole = (await rest('GET', '/v1/registry')).capabilities.length;
  let rows = await page.locator('#cap-list tbody tr').count();
  check(rows === Math.min(whole, 200), `registry: the first page of entries (${rows} of ${whole})`);
  while (await page.locator('#more-entries').count()) {
    await page.focus('#more-entries');
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => document.querySelectorAll('#cap-list tbody tr').length > n, rows);
    rows = await page.locator('#cap-list tbody tr').count();
  }
  check(rows === whole, `registry: following the pages gives every entry (${rows} of ${whole})`);
}
await shot('registry', false);
await axe('registry');
// The diff of registry versions 1 (the seed) and 2 (UI_CHOP added), from
// the history's form.
await page.fill('#va', '1');
await page.fill('#vb', '2');
await page.press('#vb', 'Enter');
await ready('/registry/diff/1/2');
check(/UI_CHOP\s+added/.test(await text('main')), 'registry: the diff of two versions names the capability added');
await axe('registry diff');
await page.goBack();
await ready('/registry');
await page.fill('#cap-filter', 'UI_CHOP');
await page.click('text=UI_CHOP');
await ready('/registry/capabilities/UI_CHOP');
const desc = page.locator('#cap-description');
check((await desc.innerText()) === HOSTILE && (await desc.locator('img, script, b').count()) === 0, 'a capability description holding HTML and <script> shows as text');
await page.click('#nav >> text=Upstreams');
await ready('/upstreams');
await shot('upstreams');
await axe('upstreams');
await page.click('text=shop');
await ready('/upstreams/shop');
const toolDesc = page.locator('.tool-description', { hasText: 'Chop' });
check((await toolDesc.count()) === 1 && (await toolDesc.innerText()) === HOSTILE && (await toolDesc.locator('img, script, b').count()) === 0, 'an upstream tool description holding HTML and <script> shows as text');
// An admin action without the token: Plan sync opens the form, and runs
// once the token is entered.
await page.click('text=Forget token');
await ready('/upstreams/shop');
await page.focus('#plan-sync');
await page.keyboard.press('Enter');
await page.waitForSelector('#token-dialog[open]');
check(/sync of shop/.test(await text('#token-why')), 'token form: Plan sync without the token opens it');
await page.keyboard.type(TOKEN);
await page.keyboard.press('Enter');
await page.waitForSelector('#sync-plan table');
check(/echo/.test(await text('#sync-plan')), 'upstream: the sync plan, before any apply');
await shot('upstream');
await axe('upstream');
check(await page.evaluate(() => window.__xss === undefined), 'no injected script ran');
// Policies: the set in force, a policy's SMT-LIB and lint, a past version.
await page.click('#nav >> text=Policies');
await ready('/policies');
check((await page.locator('details.policy').count()) === 6 && /airline_cancel/.test(await text('main')), 'policies: the six airline policies in force');
await page.locator('details.policy summary', { hasText: 'airline_cancel' }).click();
await page.locator('details.policy[open] button.lint').click();
await page.waitForSelector('#lint-out table');
// The airline policies bind their constants with derive (CEL): linted as
// written, none is unbound and the policy is not vacuous.
const lintText = await text('#lint-out');
check(/Lint of airline_cancel/.test(lintText) && (await page.locator('#lint-out tbody tr').count()) === 6 && /unbound\s+none/.test(lintText) && /vacuous\s+no/.test(lintText),
  `policies: a policy's lint, check by check, of the policy as written: ${lintText.replace(/\s+/g, ' ').slice(0, 200)}`);
await shot('policies');
await axe('policies');
await page.click('text=version 1');
await ready('/policies/versions/1');
check(/airline_/.test(await text('main')), 'policies: a past version of the set');
await axe('policy version');

// Fuzz runs: the run started over REST, then its findings.
await page.click('#nav >> text=Fuzz');
await ready('/fuzz');
check(/done/.test(await text('main table')), 'fuzz: the stored run is listed, done');
await axe('fuzz');
await page.click(`text=#${fuzzRun.id}`);
await ready(`/fuzz/${fuzzRun.id}`);
const shownFindings = await page.locator('section[aria-labelledby="sec-findings"] tbody tr').count();
check(fuzzFindings.length > 0 && shownFindings === fuzzFindings.length && new RegExp(`^${fuzzFindings.length} finding`).test(await text('#fuzz-summary')),
  `fuzz: the run's ${fuzzFindings.length} findings shown (${shownFindings} rows)`);
await shot('fuzz-run', false);
await axe('fuzz run');
// A run started from the page (the token is set): the run's page follows
// it while it runs, then shows its report.
await page.click('#nav >> text=Fuzz');
await ready('/fuzz');
await page.fill('#fuzz-seconds', '1');
await page.fill('#fuzz-seed', '3');
await page.focus('#fuzz-start');
await page.keyboard.press('Enter');
await page.waitForURL((u) => /\/ui\/fuzz\/\d+$/.test(u.pathname) && u.pathname !== `/ui/fuzz/${fuzzRun.id}`);
const ownRun = new URL(page.url()).pathname.split('/').pop();
await page.waitForFunction((p) => document.body.dataset.ready === p, `/fuzz/${ownRun}`, { timeout: 60000 });
const ownRunText = await text('main');
check(/done/.test(await text('#fuzz-state')) && /finding/.test(await text('#fuzz-summary')) && /Seed, seconds\s+3, at most 1 s/.test(ownRunText),
  `fuzz: a run started from the page (seed 3, 1 s) followed to its report (run #${ownRun})`);

// No token in any URL the page asked for or showed.
check(urls.length > 0 && !urls.some((u) => u.includes(TOKEN)), `the token is in none of the ${urls.length} URLs requested or shown`);
check(problems.length === 0, `no console error, CSP violation or page error${problems.length ? ': ' + problems.join('; ') : ''}`);

await context.close();
if (failures) {
  console.log(`${failures} check(s) failed; screenshots in ${OUT}`);
  process.exit(1);
}
console.log(`every check passed; screenshots in ${OUT}`);
