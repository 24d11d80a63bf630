// Real agents, really run: each pinned agent CLI (pdb-env agent install) in its own session against
// cassettes written here, through pdb-env agent run. Each session must equal the tree pdb-env makes
// by playing the same cassette itself on a copy of the base; a step the agent's tools cannot do,
// or one that fails, ends as a typed failure within seconds; the ACP agents' refused requests are
// E_POLICY_DENIED and they go on. Only the model is scripted.
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCassette } from '../../../agents/cassette/cassette.js';
import { replayCassette } from '../../../agents/cassette/replay.js';
import { RUNNABLE_AGENTS, type RunnableAgent } from '../../../agents/real/catalog.js';
import { findInstalled } from '../../../agents/real/install.js';
import { scanTree } from '../../../model/scan/scan.js';
import { diffEntries } from '../../../model/snapshot.js';
import { cli, isRoot, realAgentsMissing, skipTest, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, {
  'multi.txt': 'alpha\nbeta\ngamma\ndelta\n',
  'tool.sh': { content: '#!/bin/sh\necho tool\n', exec: true },
  'plain.sh': '#!/bin/sh\necho plain\n',
  'gone.txt': 'delete me\n',
  'old name.txt': 'rename me\n',
  // Larger than one read through Codex's shell (its output is cut at about 10 KB).
  'big.txt': Array.from({ length: 1000 }, (_, i) => `line ${i} of a larger file\n`).join(''),
  docs: { 'guide.md': '# guide\n', ünï: { '数据.md': 'Unicode\nfile\n' } },
});
const env = { PDB_ENV_STORE: join(t.dir, 'store') };
let sourceBefore: Awaited<ReturnType<typeof scanTree>>['entries'] = [];
test.before(async () => {
  sourceBefore = (await scanTree(src, { excludes: [] })).entries;
});
const missing = realAgentsMissing();

let n = 0;
function cassetteFile(steps: unknown[]): string {
  const file = join(t.dir, `cassette-${++n}.json`);
  writeFileSync(file, JSON.stringify({ kind: 'pdb-env-cassette', version: 1, steps, final: 'finished' }));
  return file;
}

/** Everything at once: nested and Unicode paths, a multi-line edit, an overwrite that keeps the exec bit, a shell step, no final newline. */
const EVERYTHING = [
  { action: 'write', path: 'new/nested/deep/ü 数据.txt', content: 'héllo\nwörld\n' },
  { action: 'edit', path: 'multi.txt', old: 'beta\ngamma\n', new: 'BETA\n  indented gamma\nextra line\n' },
  { action: 'edit', path: 'docs/ünï/数据.md', old: 'Unicode', new: 'Ünïcödé ✓' },
  { action: 'write', path: 'tool.sh', content: '#!/bin/sh\necho rewritten\n' },
  { action: 'delete', path: 'gone.txt' },
  { action: 'rename', from: 'old name.txt', to: 'moved/new name.txt' },
  { action: 'symlink', path: 'links/guide.md', target: '../docs/guide.md' },
  { action: 'chmod', path: 'plain.sh', mode: '+x' },
  { action: 'chmod', path: 'tool.sh', mode: '-x' },
  { action: 'mkdir', path: 'empty/deeper' },
  { action: 'shell', command: "printf '%s\\n' \"$(ls docs | sort | tr '\\n' ,)\" > shell-saw.txt && test -x plain.sh" },
  { action: 'write', path: 'no-newline.txt', content: 'the end, without a newline' },
  { action: 'edit', path: 'big.txt', old: 'line 900 of a larger file\n', new: 'line 900, edited\n' },
];

/** The tree pdb-env itself makes from the cassette on a copy of the base (what the agent must match). */
async function described(file: string): Promise<{ entries: Awaited<ReturnType<typeof scanTree>>['entries']; failure: string | null }> {
  const copy = join(t.dir, `replay-${++n}`);
  cpSync(src, copy, { recursive: true, verbatimSymlinks: true });
  const { cassette } = parseCassette(JSON.parse(readFileSync(file, 'utf8')));
  const r = await replayCassette(copy, cassette);
  return { entries: (await scanTree(copy, { excludes: [] })).entries, failure: r.failure?.message ?? null };
}

function run(name: string, agent: RunnableAgent, file: string): { code: number; out: any; ms: number } {
  assert.is(cli(['create', name, '--from', src], { env }).code, 0);
  const t0 = Date.now();
  const r = cli(['agent', 'run', name, '--agent', agent, '--cassette', file, '--timeout', '180000', '--json'], { env });
  return { code: r.code, out: JSON.parse(r.stdout), ms: Date.now() - t0 };
}

async function sessionTree(name: string) {
  const root = cli(['path', name], { env }).stdout.trim();
  return { root, entries: (await scanTree(root, { excludes: [] })).entries };
}

for (const agent of RUNNABLE_AGENTS) {
  test(`${agent} plays a cassette it has never seen through its own tools, and its session equals the cassette's tree`, async () => {
    if (agent === 'opencode' && !findInstalled('opencode'))
      return skipTest('opencode agent run', 'opencode', 'the optional opencode is not installed (pdb-env agent install opencode)');
    if (missing) return skipTest(`${agent} agent run`, 'real-agents', missing);
    const file = cassetteFile(EVERYTHING);
    const { code, out } = run(`all-${agent}`, agent, file);
    assert.is(code, 0, JSON.stringify(out));
    assert.is(out.outcome, 'ok');
    assert.is(out.agent, agent);
    assert.is(out.model, 'scripted');
    assert.match(out.cassette, /^sha256:[0-9a-f]{64}$/);
    assert.equal(out.steps, { total: EVERYTHING.length, done: EVERYTHING.length });
    assert.ok(out.turns >= EVERYTHING.length, `one tool call per turn: ${out.turns} turns`);
    assert.is(out.network, isRoot() ? 'loopback-only' : 'not-enforced');
    if (isRoot()) assert.equal(out.interfaces, ['lo']);
    const want = await described(file);
    assert.is(want.failure, null);
    const got = await sessionTree(`all-${agent}`);
    assert.equal(diffEntries(want.entries, got.entries), [], 'the session equals the tree the cassette describes');
    assert.ok(out.changes.some((c: { kind: string; path: string }) => c.kind === 'mode' && c.path === 'plain.sh'));
    assert.equal(diffEntries(sourceBefore, (await scanTree(src, { excludes: [] })).entries), [], 'the source is unchanged');
    assert.is(cli(['discard', `all-${agent}`], { env }).code, 0);
  });
}

test('a failing step is E_AGENT_STEP_FAILED within seconds; the steps after it are not played', async () => {
  if (missing) return skipTest('failing steps', 'real-agents', missing);
  const steps = [
    { action: 'mkdir', path: 'first' },
    { action: 'edit', path: 'multi.txt', old: 'not in the file', new: 'x' },
    { action: 'mkdir', path: 'never' },
  ];
  for (const agent of ['codex', 'claude-acp'] as const) {
    const { code, out, ms } = run(`fail-${agent}`, agent, cassetteFile(steps));
    assert.is(code, 1);
    assert.is(out.outcome, 'E_AGENT_STEP_FAILED', JSON.stringify(out.failure));
    assert.match(out.failure.message, /^step 2 edit multi\.txt:/);
    assert.equal(out.steps, { total: 3, done: 1 });
    assert.ok(ms < 90_000, `took ${ms} ms`);
    const { root } = await sessionTree(`fail-${agent}`);
    assert.ok(existsSync(join(root, 'first')));
    assert.not.ok(existsSync(join(root, 'never')));
  }
  // A shell step that exits non-zero, through Claude Code's Bash.
  const shell = run('fail-shell', 'claude', cassetteFile([{ action: 'shell', command: 'echo nope >&2; exit 7' }]));
  assert.is(shell.out.outcome, 'E_AGENT_STEP_FAILED');
  assert.match(shell.out.failure.message, /step 1 shell/);
});

test("a step the agent's own tools refuse (a write outside the root, as a command) is a typed failure, not a hang", async () => {
  if (missing) return skipTest('refused steps', 'real-agents', missing);
  for (const agent of ['codex', 'claude'] as const) {
    const { out, ms } = run(
      `out-${agent}`,
      agent,
      cassetteFile([
        { action: 'write', path: '../escape.txt', content: 'x\n', expect: 'denied' },
        { action: 'write', path: 'in.txt', content: 'in\n' },
      ]),
    );
    assert.is(out.outcome, 'ok', `the agent refused it and went on: ${JSON.stringify(out.failure)}`);
    const { root } = await sessionTree(`out-${agent}`);
    assert.not.ok(existsSync(join(root, '..', 'escape.txt')));
    assert.ok(existsSync(join(root, 'in.txt')));
    assert.ok(ms < 90_000);
    // A write the tools cannot do (under a regular file): a typed failure, quickly.
    const cannot = run(`cannot-${agent}`, agent, cassetteFile([{ action: 'write', path: 'multi.txt/inside.txt', content: 'x\n' }]));
    assert.is(cannot.out.outcome, 'E_AGENT_STEP_FAILED', JSON.stringify(cannot.out.failure));
    assert.ok(cannot.ms < 90_000);
  }
});

test("a shell step that outlasts Codex's 10 s yield is read on through its write_stdin tool", async () => {
  if (missing) return skipTest('a long shell step', 'real-agents', missing);
  const { code, out } = run('slow-codex', 'codex', cassetteFile([{ action: 'shell', command: 'sleep 11 && echo slow > slow.txt' }]));
  assert.is(code, 0, JSON.stringify(out.failure));
  assert.ok(out.turns >= 2, 'the command, then at least one poll');
  assert.ok(existsSync(join((await sessionTree('slow-codex')).root, 'slow.txt')));
});

test("the agent runs through pdb-env run: the session's name, TMPDIR and port, a private HOME, no real credentials", async () => {
  if (missing) return skipTest('the runtime of an agent run', 'real-agents', missing);
  const cmd = 'printf "%s\\n" "$PDB_ENV_SESSION" "$TMPDIR" "$PORT" "$HOME" "${OPENAI_API_KEY:-none}" > env.txt';
  for (const agent of ['codex', 'claude'] as const) {
    const name = `env-${agent}`;
    const { code, out } = run(name, agent, cassetteFile([{ action: 'shell', command: cmd }]));
    assert.is(code, 0, JSON.stringify(out.failure));
    const session = JSON.parse(cli(['list', '--json'], { env }).stdout).sessions.find((x: { name: string }) => x.name === name);
    const { root } = await sessionTree(name);
    const [sname, tmp, port, home, key] = readFileSync(join(root, 'env.txt'), 'utf8').trim().split('\n');
    assert.equal([sname, tmp, Number(port), key], [name, session.tmpDir, session.ports[0], 'none']);
    assert.ok(home!.startsWith(join(t.dir, 'store')) && !home!.startsWith(root), `a private home outside the root: ${home}`);
    assert.equal(JSON.parse(cli(['ps', name, '--json'], { env }).stdout).processes, [], 'nothing left running');
  }
});

test('the deadline ends a run that does not finish: E_AGENT_TIMEOUT, and nothing of it keeps running', async () => {
  if (missing) return skipTest('the deadline', 'real-agents', missing);
  assert.is(cli(['create', 'late', '--from', src], { env }).code, 0);
  const t0 = Date.now();
  const r = cli(
    [
      'agent',
      'run',
      'late',
      '--agent',
      'claude',
      '--cassette',
      cassetteFile([{ action: 'shell', command: 'sleep 120' }]),
      '--timeout',
      '8000',
      '--json',
    ],
    { env },
  );
  const out = JSON.parse(r.stdout);
  assert.is(out.outcome, 'E_AGENT_TIMEOUT');
  assert.ok(Date.now() - t0 < 40_000, `ended after ${Date.now() - t0} ms`);
  assert.equal(JSON.parse(cli(['ps', 'late', '--json'], { env }).stdout).processes, []);
});

test('ACP agents: .env and outside the root are refused by the workspace policy (E_POLICY_DENIED) and the agent goes on', async () => {
  if (missing) return skipTest('ACP policy denials', 'real-agents', missing);
  const steps = [
    { action: 'write', path: '.env', content: 'TOKEN=1\n', expect: 'denied' },
    { action: 'write', path: '../outside.txt', content: 'x\n', expect: 'denied' },
    { action: 'write', path: 'after/denials.txt', content: 'went on\n' },
  ];
  for (const agent of ['codex-acp', 'claude-acp'] as const) {
    const { code, out } = run(`acp-${agent}`, agent, cassetteFile(steps));
    assert.is(code, 0, JSON.stringify(out.failure));
    const refused = out.denials.filter((d: { code: string; access: string }) => d.code === 'E_POLICY_DENIED' && d.access === 'write');
    assert.equal([...new Set(refused.map((d: { path: string }) => d.path))].sort(), ['(outside the root)', '.env']);
    assert.match(refused.find((d: { path: string }) => d.path === '.env').rule, /credential \.env/);
    const { root } = await sessionTree(`acp-${agent}`);
    assert.not.ok(existsSync(join(root, '.env')));
    assert.not.ok(existsSync(join(root, '..', 'outside.txt')));
    assert.ok(existsSync(join(root, 'after', 'denials.txt')));
  }
});

test.run();
