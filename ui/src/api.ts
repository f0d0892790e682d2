// The public REST API (server/openapi.json), the only thing the UI talks
// to. The admin token lives in this module's memory only: never in a URL,
// in storage or in a log, and gone on reload.

let token: string | null = null;
const listeners: (() => void)[] = [];

export function setToken(t: string | null): void {
  token = t && t.length > 0 ? t : null;
  listeners.forEach((f) => f());
}
export function hasToken(): boolean { return token !== null; }
export function onToken(f: () => void): void { listeners.push(f); }

// askToken opens the token form (main.ts) saying why, and resolves true
// once a token is entered, false when the form is dismissed. An admin
// action without a token asks instead of failing.
let asker: ((why: string) => Promise<boolean>) | null = null;
export function onAskToken(f: (why: string) => Promise<boolean>): void { asker = f; }
export function askToken(why: string): Promise<boolean> { return asker ? asker(why) : Promise.resolve(false); }

const noToken = (): ApiError => new ApiError(401, { type: 'ui', title: 'Admin token needed', status: 401, detail: 'this needs the admin token: enter it with “Admin token” at the top of the page' });

// Problem is an application/problem+json answer (RFC 9457).
export interface Problem {
  type: string; title: string; status: number; detail: string;
  failures?: Failure[];
  grounding?: Grounding;
  [k: string]: unknown;
}

export class ApiError extends Error {
  constructor(public status: number, public problem: Problem) { super(problem.detail || problem.title); }
  get title(): string { return this.problem.title; }
  get detail(): string { return this.problem.detail; }
}

// api calls the API. admin, when set, says what needs the token ("Apply
// sync"): without one, or when the server refuses the one given (401),
// the token form asks for it, and the call is made again once it is
// entered.
export async function api<T>(method: string, path: string, body?: unknown, admin?: string): Promise<T> {
  for (let asked = 0; ; asked++) {
    if (admin && !token && !(asked < 2 && await askToken(admin))) throw noToken();
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (token) headers.Authorization = 'Bearer ' + token;
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    const text = await res.text();
    const data = text ? JSON.parse(text) : null;
    if (admin && res.status === 401 && asked < 2) { setToken(null); continue; } // a wrong token: ask again
    if (!res.ok) throw new ApiError(res.status, data ?? { type: 'http', title: res.statusText, status: res.status, detail: '' });
    return data as T;
  }
}

export const enc = encodeURIComponent;

export interface Match { term: string; name: string; kind: string; mode: string; confidence: number; capability: string; disc?: string }
export interface Discovery { id: string; registry: string; version: number; terms: string[]; matches: Match[]; unresolved: string[]; ok: boolean }
export interface Failure {
  field: string; code: string; codes?: string[]; value?: unknown; detail: string; policy?: string; core?: string[];
  next?: { tool: string; arguments: unknown }; // the call that would supply what a rule needs (SPEC §15)
}
export interface Check { name: string; passed: boolean; failures: number }
export interface Grounding {
  id: string; request: Record<string, unknown>; discovery: string; registry_version: number; registry: string; policies?: string;
  decision: { admitted: boolean; checks: Check[]; failures: Failure[] };
}
export type Params = Record<string, unknown>;
export interface Morphism {
  index: number; hash: string; params: Params; plan: string | null; admissible: boolean;
  rejected: string[]; reasons: { predicate: string; detail: string }[];
  artifacts: { name: string; digest: string; bytes: number }[]; score: number | null;
}
export interface Footprint {
  hash: string; layers: Record<string, string>; grounding: string; policies?: string; request: Record<string, unknown>;
  registry_version: number; registry: string; family?: { name: string; identity: string }; metric: { name: string; identity: string; direction: string };
  data: { path: string; digest: string; rows: number; columns: string[]; from: string | null; to: string | null };
  risk: { max_leverage: number; predicates: string[] };
  evaluation: { start: number | null; from: string | null; to: string | null; rows: number };
  morphisms: Morphism[]; selected: string | null; selected_index: number | null; dependencies: string;
}
export interface PnL { execution: string; index: number; morphism: string; dates: string[]; pnl: (number | null)[] }
export interface Replay { hash: string; replay_hash: string; match: boolean; registry_version: number; layers: { layer: string; stored: string; replayed: string; match: boolean }[] }
export interface DiffLayer { layer: string; a: string; b: string; same: boolean; [k: string]: unknown }
export interface Diff { a: string; b: string; same: boolean; layers: DiffLayer[] }

export const LAYERS = ['registry', 'request', 'morphisms', 'plans', 'artifacts', 'score', 'selection', 'data'];
