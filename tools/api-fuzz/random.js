// Collection pre-request script (runs before every request): fresh random
// values for the fuzz variations of portman-config.json. Postman's own
// dynamic variables ({{$randomWord}}, {{$randomInt}}, …) cover ordinary
// words and numbers; these cover what they do not: digests, hostile
// strings, JSON values of every type, data paths that try to escape the
// data root, and s-expressions for capability entries.
const pick = (a) => a[Math.floor(Math.random() * a.length)];
const hex = (n) => Array.from({ length: n }, () => pick('0123456789abcdef')).join('');
const pieces = ['a', 'Z', '0', '9', ' ', '  ', '/', '\\', '"', "'", '%', '%00', '%2e%2e', '..', '~', '*', '?', '#', '&', '=',
  '\u00e9', '\u00df', '\u4e2d', '\u0130', '\u212a', '\ud83d\ude00', '\u200b', '\u0000', '\u0007', '\t', '\n', '\r',
  '{', '}', '[', ']', ':', ',', '-', '_', '.', '+', '<script>', 'null', 'momentum', 'sharpe', 'MOM_WZS', 'SRP'];
function junk() {
  const n = pick([0, 1, 2, 3, 8, 40, 300, 5000]);
  let s = '';
  for (let i = 0; i < n; i++) s += pick(pieces);
  return s;
}
// Inside a JSON string literal of a raw body.
const inString = (s) => JSON.stringify(s).slice(1, -1);
const names = ['MOM_WZS', 'MOM_REV', 'SRP', 'TRN', 'MDD', 'HIT', 'CARRY', 'x', '', 'mom_wzs', 'MOM_WZS ', 'SRP\u0000'];
const json = () => pick(['0', '-1', '-5', '1', '2', '3', '25', '100', '1e308', '-1e308', '1e-300', '1.5', '0.5',
  '9007199254740993', '100000000', '"25"', '""', '"x"', 'null', 'true', 'false', '[]', '[0]', '[25, 50]', '[-1, 0, 1]',
  '[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]', '[[1]]', '{}', '{"a": 1}', JSON.stringify(junk())]);
const kernels = ['srp', 'srt', 'mdd', 'trn', 'hit', 'clm', 'aret', 'avol', 'wzs', 'clip', 'dlog', 'cs0', 'volsize', 'neg', 'nope'];
function sexpr(depth) {
  if (depth <= 0 || Math.random() < 0.3) return pick(['p', 'x', '$window', '$nope', '1', '-1', '0', '1e309', '"s"', junk().replace(/[()]/g, '')]);
  const args = Array.from({ length: Math.floor(Math.random() * 4) }, () => sexpr(depth - 1));
  return '(' + [pick(kernels), ...args].join(' ') + ')';
}

pm.variables.set('rnd_junk', junk());
pm.variables.set('rnd_junk_str', inString(junk()));
pm.variables.set('rnd_digest', pick(['sha256:', 'blake3:']) + hex(64));
pm.variables.set('rnd_badDigest', pick(['sha256:', 'blake3:', 'md5:', 'SHA256:', '']) + hex(pick([0, 1, 63, 65, 64])).replace(/^./, pick(['g', 'A', '0'])));
pm.variables.set('rnd_json', json());
pm.variables.set('rnd_json2', json());
pm.variables.set('rnd_name', inString(pick(names.concat([junk()]))));
pm.variables.set('rnd_capName', 'FZ_' + hex(12));
// A session token's shape (ggs_ + 43 base64url characters), no session's.
pm.variables.set('rnd_token', Array.from({ length: 43 }, () => pick('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split(''))).join(''));
pm.variables.set('rnd_data', inString(pick(['oil-spot/wti-daily.csv', 'oil-spot/wti-daily.csv.gz', '../go.mod', '../../../../etc/passwd',
  '/etc/passwd', 'oil-spot/../oil-spot/wti-daily.csv', 'oil-spot', '.', '', 'nope.csv', 'oil-spot/%2e%2e/x', 'C:\\x', junk()])));
pm.variables.set('rnd_expr', inString(sexpr(3)));
pm.variables.set('rnd_bool', pick(['true', 'false']));
