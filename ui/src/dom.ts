// DOM helpers. Every string reaches the page as a text node or an
// attribute value set through the DOM, never as markup: a capability's
// description or an upstream's tool text that holds HTML shows as text.

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.className = String(v);
    } else if (k === 'style') {
      throw new Error('style attributes are refused by the CSP: use a class');
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// link is an in-app link: the router intercepts its clicks.
export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href }, ...children);
}

// digest shows a digest shortened, whole in its title, linked when a page
// shows the object it names.
export function digest(d: string | null | undefined, href?: string): HTMLElement {
  if (!d) return h('span', { class: 'muted' }, '—');
  const short = d.replace(/^(sha256|blake3):/, '$1:').slice(0, 19) + '…';
  const code = h('code', { class: 'digest', title: d }, short);
  return href ? h('a', { href, class: 'digest-link', 'data-digest': d }, code) : code;
}

export function section(title: string, ...children: Child[]): HTMLElement {
  const id = 'sec-' + title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

export function table(headers: string[], rows: Child[][], caption?: string): HTMLTableElement {
  return h('table', {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

export function badge(ok: boolean, yes: string, no: string): HTMLElement {
  return h('span', { class: ok ? 'badge ok' : 'badge bad' }, ok ? yes : no);
}

export function fmt(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

export function pre(v: unknown): HTMLElement {
  return h('pre', { class: 'json', tabindex: 0 }, JSON.stringify(v, null, 2));
}

export function errorBox(e: unknown): HTMLElement {
  const p = e as { title?: string; detail?: string; status?: number };
  return h('div', { class: 'error', role: 'alert' },
    h('strong', {}, p.status ? `${p.status} ${p.title ?? ''}` : 'Error'), ' ',
    p.detail ?? String(e));
}

// add appends children (strings, nodes, lists; null and false skipped).
export function add(el: Node, ...children: Child[]): void { append(el, children); }
