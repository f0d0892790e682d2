// Verifies a DSSE envelope in the browser with WebCrypto's Ed25519 and the
// server's published keys (GET /v1/keys): the signature over DSSE's
// pre-authentication encoding, and that the statement's subject is the
// object the page shows.
import { api, ApiError } from './api';
import { badge, errorBox, h } from './dom';

interface Envelope { payload: string; payloadType: string; signatures: { keyid: string; sig: string }[] }
interface Keys { keys: { keyid: string; public_key_pem: string }[] }

const b64 = (s: string): Uint8Array<ArrayBuffer> => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

function pae(type: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const te = new TextEncoder();
  const head = te.encode(`DSSEv1 ${te.encode(type).length} ${type} ${body.length} `);
  const out = new Uint8Array(head.length + body.length);
  out.set(head); out.set(body, head.length);
  return out;
}

export async function verifyEnvelope(path: string, subject: string): Promise<HTMLElement> {
  try {
    const [env, keys] = await Promise.all([api<Envelope>('GET', path), api<Keys>('GET', '/v1/keys')]);
    const body = b64(env.payload);
    const stmt = JSON.parse(new TextDecoder().decode(body)) as { subject?: { name: string; digest: Record<string, string> }[]; predicateType?: string };
    const [alg, hex] = subject.split(':');
    const names = (stmt.subject ?? []).some((s) => s.digest?.[alg] === hex);
    const rows: HTMLElement[] = [];
    let ok = false;
    for (const sig of env.signatures) {
      const k = keys.keys.find((x) => x.keyid === sig.keyid);
      if (!k) { rows.push(h('li', {}, `signature by ${sig.keyid}: no such key published`)); continue; }
      const der = b64(k.public_key_pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''));
      const key = await crypto.subtle.importKey('spki', der, { name: 'Ed25519' }, false, ['verify']);
      const good = await crypto.subtle.verify({ name: 'Ed25519' }, key, b64(sig.sig), pae(env.payloadType, body));
      ok ||= good;
      rows.push(h('li', {}, badge(good, 'valid', 'invalid'), ` Ed25519 signature by key ${sig.keyid}`));
    }
    return h('div', { id: 'verify-result' },
      h('p', { class: 'decision' }, badge(ok && names, 'Verified', 'Not verified'), ` ${stmt.predicateType ?? env.payloadType}`),
      h('ul', {}, rows, h('li', {}, badge(names, 'names it', 'does not name it'), ` the statement's subject is ${subject}`)));
  } catch (e) {
    return errorBox(e instanceof ApiError ? e.problem : e);
  }
}
