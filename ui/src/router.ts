// Routing on the path below /ui/: every object has a URL, and the server
// answers index.html for each, so a deep link (a digest pasted into
// /ui/executions/…) loads this app, which shows it.

export type Page = (main: HTMLElement, ...args: string[]) => Promise<void> | void;
const routes: [RegExp, Page][] = [];

export function route(pattern: string, page: Page): void {
  // ":name" matches one path segment (a digest holds a colon, no slash).
  const re = new RegExp('^' + pattern.replace(/:[a-z]+/g, '([^/]+)') + '/?$');
  routes.push([re, page]);
}

export const BASE = '/ui';

export function go(path: string): void {
  history.pushState(null, '', path);
  // Focus the new page, so that a keyboard user continues from its top.
  void render().then(() => document.getElementById('main')?.focus({ preventScroll: false }));
}

let renderSeq = 0;

export async function render(): Promise<void> {
  const seq = ++renderSeq;
  const main = document.getElementById('main')!;
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  document.body.removeAttribute('data-ready');
  for (const [re, page] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    while (main.firstChild) main.removeChild(main.firstChild);
    const args = m.slice(1).map((s) => decodeURIComponent(s));
    try {
      await page(main, ...args);
    } finally {
      if (seq === renderSeq) {
        document.body.setAttribute('data-ready', path);
        const h1 = main.querySelector('h1');
        document.title = (h1?.textContent ? h1.textContent + ' · ' : '') + 'groundgate';
        markNav(path);
      }
    }
    return;
  }
  while (main.firstChild) main.removeChild(main.firstChild);
  const h1 = document.createElement('h1');
  h1.textContent = 'Not found';
  main.appendChild(h1);
  document.body.setAttribute('data-ready', path);
}

function markNav(path: string): void {
  document.querySelectorAll<HTMLAnchorElement>('#nav a').forEach((a) => {
    const p = a.getAttribute('href')!.slice(BASE.length);
    const cur = p === '/' ? path === '/' : path.startsWith(p);
    if (cur) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
}

export function start(): void {
  document.addEventListener('click', (ev) => {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = (ev.target as Element).closest('a');
    if (!a || a.hasAttribute('download') || a.target) return;
    const href = a.getAttribute('href');
    if (!href || !href.startsWith(BASE + '/') && href !== BASE) return;
    ev.preventDefault();
    go(href);
  });
  window.addEventListener('popstate', () => void render());
  void render();
}
