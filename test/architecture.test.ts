// The layers of the design, enforced: an import may only point down, and no two files import each
// other in a circle. Reads every source file's import specifiers (static, dynamic and type-only)
// and fails listing every upward edge and every cycle it finds.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT } from './helpers/index.js';

/** What each top-level folder may import (besides itself). Workloads never reach into the store or scheduler. */
const ALLOWED: Record<string, readonly string[]> = {
  model: [],
  backends: ['model'],
  sessions: ['model', 'backends'],
  agents: ['model'],
  workloads: ['model', 'agents'],
  harness: ['model', 'backends', 'sessions', 'agents', 'workloads'],
  // backends/table: the backends' names and traits (clone family), never a backend: the table's
  // only static import is a type (checked below), and its rows import their modules only when loaded.
  reports: ['model', 'harness/receipt/receipt-types', 'backends/table'],
  cli: ['model', 'backends', 'sessions', 'agents', 'workloads', 'harness', 'reports', 'index'],
  scripts: ['model', 'backends', 'sessions', 'agents', 'workloads', 'harness', 'reports', 'cli', 'index'],
  // The public entry, index.ts at the root: everything below the edges, never cli or scripts.
  index: ['model', 'backends', 'sessions', 'agents', 'workloads', 'harness', 'reports'],
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (name === 'fixtures' || name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|cts|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

/** The module path of `spec` relative to the repository root, without extension ('harness/receipt/receipt-types'). */
function target(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const abs = resolve(dirname(file), spec);
  // A script that loads the build (`../dist/sessions/service.js`) is judged by the source it loads.
  return relative(REPO_ROOT, abs)
    .split(sep)
    .join('/')
    .replace(/^dist\//, '')
    .replace(/\.(js|ts|mjs|cjs|cts)$/, '');
}

function allowed(fromTop: string, to: string): boolean {
  const toTop = to.split('/')[0]!;
  if (toTop === fromTop) return true;
  return (ALLOWED[fromTop] ?? []).some((a) => to === a || toTop === a);
}

test('every import points down the layers', () => {
  const bad: string[] = [];
  let edges = 0;
  for (const top of Object.keys(ALLOWED)) {
    const files = existsSync(join(REPO_ROOT, top)) ? sourceFiles(join(REPO_ROOT, top)) : [join(REPO_ROOT, `${top}.ts`)];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const to = target(file, (m[1] ?? m[2] ?? m[3])!);
        if (to === null) continue;
        edges++;
        if (to.startsWith('test/')) bad.push(`${relative(REPO_ROOT, file)} -> ${to} (product code never imports tests)`);
        else if (!allowed(top, to)) bad.push(`${relative(REPO_ROOT, file)} -> ${to}`);
      }
    }
  }
  assert.ok(edges > 100, `found only ${edges} internal imports: the scanner is broken`);
  assert.equal(bad, [], `imports that run up the layers:\n${bad.join('\n')}`);
});

test('the checker sees an upward import', () => {
  assert.not.ok(allowed('model', 'sessions/service'));
  assert.not.ok(allowed('reports', 'harness/bench'));
  assert.ok(allowed('reports', 'harness/receipt/receipt-types'));
  assert.ok(allowed('reports', 'backends/table'));
  assert.not.ok(allowed('reports', 'backends/registry'));
  assert.not.ok(allowed('index', 'cli/main'));
  assert.not.ok(allowed('workloads', 'sessions/service'));
  const text = "import type { X } from '../sessions/service.js';\nconst y = await import('../harness/bench.js');";
  const found = [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]);
  assert.equal(found, ['../sessions/service.js', '../harness/bench.js']);
});

test('the backends table, which reports may read, imports only types statically: reading a trait loads no backend', () => {
  const file = join(REPO_ROOT, 'backends', 'table.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const values = source.statements
    .filter((s): s is ts.ImportDeclaration | ts.ExportDeclaration => ts.isImportDeclaration(s) || ts.isExportDeclaration(s))
    .filter((s) => s.moduleSpecifier && !(ts.isImportDeclaration(s) ? s.importClause?.isTypeOnly : s.isTypeOnly))
    .map((s) => s.moduleSpecifier!.getText(source));
  assert.equal(values, []);
});

/** The file each relative import of `file` names (repository-relative, .ts/.mjs), where it exists. */
function importedFiles(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const to = target(file, (m[1] ?? m[2] ?? m[3])!);
    if (to === null) continue;
    const hit = ['.ts', '.mts', '.mjs'].map((ext) => to + ext).find((f) => existsSync(join(REPO_ROOT, f)));
    if (hit) out.push(hit);
  }
  return out;
}

/** Every cycle of the graph, as its strongly connected components of more than one file (or a file importing itself); Tarjan's algorithm. */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

test('no file-level import cycle, type-only imports included, tests too', () => {
  const graph = new Map<string, string[]>();
  const tops = [...Object.keys(ALLOWED), 'test'].filter((top) => existsSync(join(REPO_ROOT, top)));
  for (const top of tops) {
    const files = statSync(join(REPO_ROOT, top)).isDirectory() ? sourceFiles(join(REPO_ROOT, top)) : [join(REPO_ROOT, top)];
    for (const file of files) graph.set(relative(REPO_ROOT, file).split(sep).join('/'), importedFiles(file, readFileSync(file, 'utf8')));
  }
  graph.set('index.ts', importedFiles(join(REPO_ROOT, 'index.ts'), readFileSync(join(REPO_ROOT, 'index.ts'), 'utf8')));
  assert.ok(graph.size > 200, `found only ${graph.size} files`);
  assert.ok([...graph.values()].reduce((n, e) => n + e.length, 0) > 500, 'too few edges: the scanner is broken');
  const cycles = importCycles(graph);
  assert.equal(
    cycles,
    [],
    `files that import each other in a circle (give the shared type its own home):\n${cycles.map((c) => c.join(' -> ')).join('\n')}`,
  );
});

test('the cycle check sees a cycle, a self-import and a cycle through a type-only import', () => {
  const g = new Map<string, string[]>([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['d.ts']],
    ['e.ts', ['a.ts']],
  ]);
  assert.equal(importCycles(g), [['a.ts', 'b.ts', 'c.ts'], ['d.ts']]);
  assert.equal(
    importCycles(
      new Map([
        ['x.ts', ['y.ts']],
        ['y.ts', []],
      ]),
    ),
    [],
  );
  const file = join(REPO_ROOT, 'cli', 'x.ts');
  assert.equal(importedFiles(file, "import type { CliContext } from './context.js';"), ['cli/context.ts']);
});

const MAX_FILE_LINES = 450;
const MAX_FUNCTION_LINES = 80;
/** A function may be longer when a comment just above it says why ("Long on purpose: ..."). */
const LONG_REASON = /long on purpose|long because/i;

/** Functions over the limit without a reason in the comment above them: `file:line name (N lines)`. */
function longFunctions(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const lines = text.split('\n');
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart()).line;
      const length = sf.getLineAndCharacterOfPosition(node.end).line - first + 1;
      const above = lines.slice(Math.max(0, first - 3), first + 1).join('\n');
      if (length > MAX_FUNCTION_LINES && !LONG_REASON.test(above)) {
        const name = (node as ts.FunctionDeclaration).name?.getText(sf) ?? '(anonymous)';
        out.push(`${relative(REPO_ROOT, file)}:${first + 1} ${name} (${length} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

test(`no source file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES} without a reason`, () => {
  const tooLong: string[] = [];
  const tops = [...Object.keys(ALLOWED), 'test'].filter(
    (top) => existsSync(join(REPO_ROOT, top)) && statSync(join(REPO_ROOT, top)).isDirectory(),
  );
  const files = tops.flatMap((top) => sourceFiles(join(REPO_ROOT, top)));
  files.push(join(REPO_ROOT, 'index.ts'));
  for (const file of files.filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(file, 'utf8');
    const n = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (n > MAX_FILE_LINES) tooLong.push(`${relative(REPO_ROOT, file)} (${n} lines)`);
    tooLong.push(...longFunctions(file, text));
  }
  assert.ok(files.length > 100, `found only ${files.length} files`);
  assert.equal(tooLong, [], `split these or say why they are long:\n${tooLong.join('\n')}`);
});

test('the size check sees a long function', () => {
  const body = Array.from({ length: 90 }, (_, i) => `  const x${i} = ${i};`).join('\n');
  assert.equal(longFunctions(join(REPO_ROOT, 'x.ts'), `function big() {\n${body}\n}\n`), ['x.ts:1 big (92 lines)']);
  assert.equal(longFunctions(join(REPO_ROOT, 'x.ts'), `// Long on purpose: a table.\nfunction big() {\n${body}\n}\n`), []);
});

test.run();
