// Builds the UI into dist/ (vite build after a type check) and records in
// dist/sources.sha256 the digest of the sources it was built from, which
// the Go test ui/ui_test.go recomputes: a source edited without a rebuild
// fails it. The digest: SHA-256 over one line per file, sorted by path,
// "path sha256-hex\n" (the files: src/**, and the list below).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const fixed = ['index.html', 'package.json', 'package-lock.json', 'tsconfig.json', 'vite.config.ts', 'scripts/build.mjs'];

function walk(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [relative(root, p).split(sep).join('/')];
  });
}

export function sourcesDigest() {
  const files = [...fixed, ...walk(join(root, 'src'))].sort();
  const lines = files.map((f) => `${f} ${createHash('sha256').update(readFileSync(join(root, f))).digest('hex')}\n`);
  return createHash('sha256').update(lines.join('')).digest('hex');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bin = join(root, 'node_modules', '.bin');
  try {
    execFileSync(join(bin, 'tsc'), ['--noEmit', '-p', root], { stdio: 'inherit', cwd: root });
    execFileSync(join(bin, 'vite'), ['build', '--logLevel', 'warn'], { stdio: 'inherit', cwd: root });
  } catch {
    process.exit(1); // the tool printed why
  }
  writeFileSync(join(root, 'dist', 'sources.sha256'), sourcesDigest() + '\n');
}
