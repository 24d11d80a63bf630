// A model test (fast-check): random sequences of create, run-write, checkpoint, publish, discard
// and gc against the session service, checked step by step against a small reference model of the
// store (which sessions exist, what each holds, each last checkpoint, the head of main). After
// every step doctor must find nothing, and at the end verify must pass.
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-model-');
test.after(() => t.cleanup());

const RUNS = 60;
const MAX_COMMANDS = 20;
/** Fixed for a reproducible suite; PDB_MODEL_SEED explores others. */
const SEED = Number(process.env.PDB_MODEL_SEED ?? 14);
const NAMES = ['a', 'b', 'c'] as const;
const PATHS = ['a.txt', 'new.txt', 'lib/c.ts'] as const;
const SOURCE: Record<string, string> = { 'a.txt': 'alpha\n', 'lib/c.ts': 'export const c = 1;\n' };

type Files = Map<string, string>;
interface Tree {
  digest: Digest;
  files: Files;
}
interface Model {
  sessions: Map<string, { files: Files; base: Tree; checkpoint: Tree | null }>;
  head: Tree | null;
  source: Tree | null;
}
interface Real {
  svc: SessionService;
  src: string;
}

/** Regular files of a session root (directories left out), as the model keeps them. */
async function filesOf(svc: SessionService, name: string): Promise<Files> {
  const out: Files = new Map();
  const { readFileSync } = await import('node:fs');
  for (const e of await svc.scanEntries(name))
    if (e.kind === 'file') out.set(e.path, readFileSync(join(svc.sessionRoot(name), e.path), 'utf8'));
  return out;
}

/** The files of a Snapshot, read back from the store's objects. */
function filesOfSnapshot(svc: SessionService, digest: Digest): Files {
  const out: Files = new Map();
  for (const e of svc.readSnapshot(digest).entries) if (e.kind === 'file') out.set(e.path, svc.store.getBytes(e.digest).toString('utf8'));
  return out;
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (isPdbError(err)) return err.code;
    throw err;
  }
}

async function checkAll(m: Model, r: Real, step: string): Promise<void> {
  assert.equal(
    (await r.svc.list()).map((s) => `${s.name}:${s.state}`),
    [...m.sessions.keys()].sort().map((n) => `${n}:ready`),
    step,
  );
  for (const [name, s] of m.sessions) assert.equal(await filesOf(r.svc, name), s.files, `${step}: files of ${name}`);
  if (m.head) {
    assert.is(await r.svc.envHead('main'), m.head.digest, `${step}: head`);
    assert.equal(filesOfSnapshot(r.svc, m.head.digest), m.head.files, `${step}: head files`);
  }
  assert.equal(await r.svc.doctor(), [], `${step}: doctor`);
}

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly name: string,
    readonly fromEnv: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const exists = m.sessions.has(this.name);
    const useEnv = this.fromEnv && m.head !== null;
    const got = await code(r.svc.create(this.name, useEnv ? { env: 'main' } : { from: r.src }));
    assert.is(got, exists ? 'E_SESSION_EXISTS' : 'ok', this.toString());
    if (!exists) {
      const rec = await r.svc.readSession(this.name);
      const base = useEnv ? m.head! : { digest: rec.base, files: new Map(Object.entries(SOURCE)) };
      if (!useEnv) m.source = base;
      m.head ??= base;
      m.sessions.set(this.name, { files: new Map(base.files), base, checkpoint: null });
    }
    await checkAll(m, r, this.toString());
  }
  toString = () => `create ${this.name}${this.fromEnv ? ' --env main' : ''}`;
}

class RunWrite implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly name: string,
    readonly path: string,
    readonly content: string,
  ) {}
  check = (m: Readonly<Model>) => m.sessions.has(this.name);
  async run(m: Model, r: Real) {
    const res = await r.svc.run(
      this.name,
      'sh',
      ['-c', 'mkdir -p "$(dirname "$2")" && printf %s "$1" > "$2"', 'sh', this.content, this.path],
      {
        stdio: 'pipe',
      },
    );
    assert.is(res.exitCode, 0, res.stderr);
    m.sessions.get(this.name)!.files.set(this.path, this.content);
    await checkAll(m, r, this.toString());
  }
  toString = () => `run ${this.name} -- write ${this.path}`;
}

class Checkpoint implements fc.AsyncCommand<Model, Real> {
  constructor(readonly name: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const s = m.sessions.get(this.name);
    if (!s) return assert.is(await code(r.svc.checkpoint(this.name)), 'E_SESSION_NOT_FOUND');
    const cp = await r.svc.checkpoint(this.name);
    s.checkpoint = { digest: cp.snapshot, files: new Map(s.files) };
    assert.equal(filesOfSnapshot(r.svc, cp.snapshot), s.files, this.toString());
    await checkAll(m, r, this.toString());
  }
  toString = () => `checkpoint ${this.name}`;
}

class Publish implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly name: string,
    readonly expectCurrent: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.sessions.has(this.name) && m.head !== null;
  async run(m: Model, r: Real) {
    const s = m.sessions.get(this.name)!;
    const expect = this.expectCurrent ? m.head!.digest : s.base.digest;
    // A checkpoint built on an older head is refused even with the right --expect (issue 11).
    const want = !s.checkpoint
      ? 'E_USAGE'
      : expect !== m.head!.digest
        ? 'E_HEAD_MOVED'
        : s.base.digest !== m.head!.digest
          ? 'E_STALE_BASE'
          : 'ok';
    assert.is(await code(r.svc.publish(this.name, 'main', expect)), want, this.toString());
    if (want === 'ok') m.head = s.checkpoint;
    await checkAll(m, r, this.toString());
  }
  toString = () => `publish ${this.name} --expect ${this.expectCurrent ? 'head' : 'base'}`;
}

class Discard implements fc.AsyncCommand<Model, Real> {
  constructor(readonly name: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    assert.equal(await r.svc.discard(this.name), { session: this.name, discarded: m.sessions.has(this.name) });
    m.sessions.delete(this.name);
    await checkAll(m, r, this.toString());
  }
  toString = () => `discard ${this.name}`;
}

class Gc implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    // In a healthy store gc repairs nothing; it only sweeps what no root reaches (issue 13).
    const swept = /^remove \d+ (unreachable objects|materialized bases no root uses) \(/;
    assert.equal(
      (await r.svc.gc()).actions.filter((a) => !swept.test(a)),
      [],
      'gc found nothing to repair in a healthy store',
    );
    // What the model still refers to survives the sweep: every live session's checkpoint and base.
    for (const [name, s] of m.sessions) {
      if (s.checkpoint) assert.equal(filesOfSnapshot(r.svc, s.checkpoint.digest), s.checkpoint.files, `gc kept the checkpoint of ${name}`);
      assert.equal(filesOfSnapshot(r.svc, s.base.digest), s.base.files, `gc kept the base of ${name}`);
    }
    await checkAll(m, r, 'gc');
  }
  toString = () => 'gc';
}

const name = fc.constantFrom(...NAMES);
const commands = fc.commands(
  [
    fc.tuple(name, fc.boolean()).map(([n, e]) => new Create(n, e)),
    fc.tuple(name, fc.constantFrom(...PATHS), fc.string({ maxLength: 6 })).map(([n, p, c]) => new RunWrite(n, p, c)),
    name.map((n) => new Checkpoint(n)),
    fc.tuple(name, fc.boolean()).map(([n, e]) => new Publish(n, e)),
    name.map((n) => new Discard(n)),
    fc.constant(new Gc()),
  ],
  { maxCommands: MAX_COMMANDS, size: 'max' },
);

test(`random operation sequences agree with the reference model (${RUNS} sequences of up to ${MAX_COMMANDS} operations)`, async () => {
  let run = 0;
  let steps = 0;
  let ran = 0;
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      const dir = join(t.dir, `run${run++}`);
      const src = join(dir, 'src');
      writeTree(src, { 'a.txt': SOURCE['a.txt']!, lib: { 'c.ts': SOURCE['lib/c.ts']! } });
      const svc = await SessionService.open(join(dir, 'store'), { create: true });
      const model: Model = { sessions: new Map(), head: null, source: null };
      await fc.asyncModelRun(() => ({ model, real: { svc, src } }), cmds);
      steps += [...cmds].length;
      ran++;
      const v = await svc.verify();
      assert.equal([v.corrupt, v.missing], [[], []]);
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  console.log(`model test: ${ran} sequences (seed ${SEED}), ${steps} operations, 0 disagreements`);
});

test.run();
