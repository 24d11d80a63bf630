// Issue 14's damage failures, each through the real CLI: a corrupt or deleted object, a truncated
// session record or environment file, an empty environment lock, garbage and unsafe journal
// entries, a lease directory replaced by a symlink, live temp files. Each must give a typed error
// (no stack), keep the work, and be reported by doctor and handled by gc.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GARBAGE_GRACE_MS } from '../../../sessions/locks/lock.js';
import { processStartTime } from '../../../model/os/proc.js';
import { tempDir } from '../../helpers/index.js';
import { assertTyped, fileDigest, flipByte, json, objectFile, pdb, writeSource } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-damage-');
test.after(() => t.cleanup());

let n = 0;
function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeSource(src);
  return { dir, src, store: join(dir, 'store') };
}

const kinds = (r: { findings: Array<{ kind: string }> }) => r.findings.map((f) => f.kind).sort();

test('a flipped byte in a file object: verify and doctor report it, create --base refuses it, create --from repairs it', () => {
  const { src, store } = setup();
  const base = json(pdb(store, ['create', 's1', '--from', src, '--json'])).base as string;
  const big = fileDigest(store, base, 'big.txt');
  flipByte(objectFile(store, big));
  const v = pdb(store, ['verify', '--json']);
  assert.is(v.code, 1);
  assert.equal(JSON.parse(v.stdout).corrupt, [big]);
  assert.equal(
    JSON.parse(v.stdout).missing.map((m: { digest: string }) => m.digest),
    [big],
    'moved to the quarantine, so missing',
  );
  const doc = json(pdb(store, ['doctor', '--json']));
  assert.equal(kinds(doc), ['corrupt-object']);
  assert.match(doc.findings[0].repair, /create NAME --from DIR/);
  assertTyped(pdb(store, ['create', 's2', '--base', base]), 'E_OBJECT_MISSING', 'create --base after verify');
  assert.match(pdb(store, ['create', 's2', '--base', base]).stderr, /big\.txt/);
  // A re-import installs good bytes again; the session gets them.
  const fixed = json(pdb(store, ['create', 's4', '--from', src, '--json']));
  assert.is(fixed.base, base);
  assert.is(readFileSync(join(fixed.root, 'big.txt'), 'utf8'), 'b'.repeat(10_000));
  assert.is(pdb(store, ['verify']).code, 0);
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
  // Not seen by verify: the copy itself notices, names the path, and quarantines the object.
  const a = fileDigest(store, base, 'a.txt');
  flipByte(objectFile(store, a));
  const r = pdb(store, ['create', 's3', '--base', base, '--json']);
  assertTyped(r, 'E_OBJECT_CORRUPT', 'create --base of a corrupt object');
  assert.match(JSON.parse(r.stdout).error.message, /a\.txt/);
  assert.is(JSON.parse(r.stdout).error.path, 'a.txt');
  assert.not.ok(existsSync(join(store, 'sessions', 's3')), 'nothing half-made');
  assert.not.ok(existsSync(objectFile(store, a)), 'the corrupt object is in the quarantine');
  const again = json(pdb(store, ['create', 's5', '--from', src, '--json']));
  assert.is(readFileSync(join(again.root, 'a.txt'), 'utf8'), 'alpha\n');
  assert.is(pdb(store, ['verify']).code, 0);
});

test('a corrupt object met by create --from (not yet quarantined) is repaired in the same create', () => {
  const { src, store } = setup();
  const base = json(pdb(store, ['create', 's1', '--from', src, '--json'])).base as string;
  flipByte(objectFile(store, fileDigest(store, base, 'lib/c.ts')));
  const r = json(pdb(store, ['create', 's2', '--from', src, '--json']));
  assert.is(readFileSync(join(r.root, 'lib', 'c.ts'), 'utf8'), 'export const c = 1;\n');
  assert.is(pdb(store, ['verify']).code, 0);
});

test('a deleted file object: verify and doctor name it, create --base is E_OBJECT_MISSING naming the path, create --from repairs', () => {
  const { src, store } = setup();
  const base = json(pdb(store, ['create', 's1', '--from', src, '--json'])).base as string;
  const a = fileDigest(store, base, 'a.txt');
  rmSync(objectFile(store, a));
  const v = pdb(store, ['verify', '--json']);
  assert.is(v.code, 1);
  assert.equal(JSON.parse(v.stdout).missing, [{ digest: a, ref: `a.txt in Snapshot ${base}` }]);
  assert.match(pdb(store, ['verify']).stdout, /E_OBJECT_MISSING: 1 objects are missing/);
  assert.equal(kinds(json(pdb(store, ['doctor', '--json']))), ['missing-object']);
  const r = pdb(store, ['create', 's2', '--base', base, '--json']);
  assertTyped(r, 'E_OBJECT_MISSING', 'create --base with a deleted object');
  assert.is(JSON.parse(r.stdout).error.path, 'a.txt');
  json(pdb(store, ['create', 's3', '--from', src, '--json']));
  assert.is(pdb(store, ['verify']).code, 0);
});

test('a truncated session record: every command is E_RECORD_CORRUPT, list shows it damaged, gc keeps its files', () => {
  const { src, store } = setup();
  const s = json(pdb(store, ['create', 'd1', '--from', src, '--json']));
  const head = json(pdb(store, ['envs', '--json'])).envs[0].head as string;
  writeFileSync(join(s.root, 'work.txt'), 'uncommitted work\n');
  const record = join(store, 'sessions', 'd1', 'session.json');
  const text = readFileSync(record, 'utf8');
  writeFileSync(record, text.slice(0, text.length >> 1));
  for (const args of [
    ['diff', 'd1'],
    ['checkpoint', 'd1'],
    ['path', 'd1'],
    ['run', 'd1', '--', 'true'],
    ['publish', 'd1', '--expect', head],
  ])
    assertTyped(pdb(store, args), 'E_RECORD_CORRUPT', args.join(' '));
  assert.match(pdb(store, ['diff', 'd1']).stderr, /session\.json/);
  const listed = json(pdb(store, ['list', '--json'])).sessions;
  assert.equal(
    listed.map((x: { name: string; state: string }) => [x.name, x.state]),
    [['d1', 'damaged']],
  );
  assert.match(pdb(store, ['list']).stdout, /d1 .*damaged[\s\S]*d1: the record of session "d1" is damaged/);
  const doc = json(pdb(store, ['doctor', '--json']));
  assert.equal(kinds(doc), ['damaged-session']);
  assert.match(doc.findings[0].repair, /copy out what you need, then pdb-env discard d1/);
  const gc = pdb(store, ['gc']);
  assert.is(gc.code, 0, gc.stderr);
  assert.match(gc.stdout, /quarantine the damaged record of session d1[\s\S]*still to do by hand:[\s\S]*pdb-env discard d1/);
  assert.is(readFileSync(join(s.root, 'work.txt'), 'utf8'), 'uncommitted work\n', 'gc kept the work');
  assert.equal(readdirSync(join(store, 'quarantine', 'records')).length, 1);
  assert.is(pdb(store, ['gc']).code, 0, 'a second gc changes nothing');
  assert.ok(existsSync(join(s.root, 'work.txt')));
  assert.equal(json(pdb(store, ['list', '--json'])).sessions[0].state, 'damaged');
  assert.is(pdb(store, ['discard', 'd1']).code, 0);
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
});

test('a truncated environment file and a file object given as --base are typed errors, never a stack', () => {
  const { src, store } = setup();
  const s = json(pdb(store, ['create', 'e1', '--from', src, '--json']));
  assertTyped(pdb(store, ['create', 'e2', '--base', fileDigest(store, s.base, 'a.txt')]), 'E_USAGE', 'create --base FILE-OBJECT');
  assert.match(pdb(store, ['create', 'e2', '--base', fileDigest(store, s.base, 'a.txt')]).stderr, /is not a Snapshot/);
  writeFileSync(join(store, 'environments', 'main.json'), '{"name":"main","he');
  writeFileSync(join(s.root, 'a.txt'), 'changed\n');
  json(pdb(store, ['checkpoint', 'e1', '--json']));
  for (const args of [['envs'], ['publish', 'e1', '--expect', s.base], ['create', 'e3', '--env', 'main']])
    assertTyped(pdb(store, args), 'E_RECORD_CORRUPT', args.join(' '));
  assert.equal(kinds(json(pdb(store, ['doctor', '--json']))), ['damaged-env']);
});

test('an environment head that names a Changeset or a file object: doctor and verify report it, with what to do', () => {
  const { src, store } = setup();
  const s = json(pdb(store, ['create', 'h1', '--from', src, '--json']));
  writeFileSync(join(s.root, 'a.txt'), 'changed\n');
  const cp = json(pdb(store, ['checkpoint', 'h1', '--json']));
  for (const [what, digest] of [
    ['a Changeset', cp.changeset],
    ['a file object', fileDigest(store, s.base, 'a.txt')],
  ] as const) {
    writeFileSync(join(store, 'environments', 'main.json'), JSON.stringify({ name: 'main', head: digest }));
    const doctor = json(pdb(store, ['doctor', '--json'])).findings as Array<{ kind: string; detail: string; repair: string }>;
    assert.equal(kinds({ findings: doctor }), ['damaged-env'], what);
    assert.match(doctor[0]!.detail, /not a Snapshot/, what);
    assert.match(doctor[0]!.repair, /history/, what);
    const verify = pdb(store, ['verify', '--json']);
    assert.is(verify.code, 1, `${what}: verify passed`);
    assert.match(verify.stdout, /not a Snapshot/, what);
    assertTyped(pdb(store, ['create', 'h2', '--env', 'main']), 'E_RECORD_CORRUPT', `${what}: create --env`);
  }
  writeFileSync(join(store, 'environments', 'main.json'), JSON.stringify({ name: 'main', head: s.base }));
  assert.is(pdb(store, ['verify']).code, 0);
});

test('an empty environment lock left by a crash: a typed E_LEASE_BUSY while young, doctor reports it, then it is broken', () => {
  const { src, store } = setup();
  const s = json(pdb(store, ['create', 'p1', '--from', src, '--json']));
  writeFileSync(join(s.root, 'a.txt'), 'p1\n');
  const cp = json(pdb(store, ['checkpoint', 'p1', '--json']));
  const lock = join(store, 'environments', 'main.json.lock');
  writeFileSync(lock, '');
  assert.equal(kinds(json(pdb(store, ['doctor', '--json']))), ['unreadable-lock']);
  assertTyped(pdb(store, ['publish', 'p1', '--expect', s.base]), 'E_LEASE_BUSY', 'publish past a young empty lock');
  const old = new Date(Date.now() - GARBAGE_GRACE_MS - 1_000);
  utimesSync(lock, old, old);
  assert.equal(kinds(json(pdb(store, ['doctor', '--json']))), ['stale-lock']);
  assert.match(pdb(store, ['gc']).stdout, /break stale lock environments\/main\.json\.lock/);
  assert.not.ok(existsSync(lock));
  assert.is(json(pdb(store, ['publish', 'p1', '--expect', s.base, '--json'])).head, cp.snapshot);

  // The first create from a source makes main past an old empty lock.
  const other = setup();
  mkdirSync(join(other.store, 'environments'), { recursive: true });
  writeFileSync(join(other.store, 'environments', 'main.json.lock'), '');
  utimesSync(join(other.store, 'environments', 'main.json.lock'), old, old);
  const first = json(pdb(other.store, ['create', 'f1', '--from', other.src, '--json']));
  assert.equal(json(pdb(other.store, ['envs', '--json'])).envs, [{ name: 'main', head: first.base }]);
});

test('garbage, unknown and unsafe journal entries are reported, quarantined by gc and never followed', () => {
  const { dir, src, store } = setup();
  json(pdb(store, ['create', 'j1', '--from', src, '--json']));
  const victim = join(dir, 'victim');
  mkdirSync(join(victim, 'root'), { recursive: true });
  writeFileSync(join(victim, 'root', 'keep.txt'), 'keep');
  const journal = join(store, 'journal');
  const intent = (id: string, fields: object) =>
    writeFileSync(
      join(journal, `${id}.json`),
      JSON.stringify({ id, pid: 2 ** 22 + 1, pidStart: null, startedAt: 'x', detail: {}, ...fields }),
    );
  writeFileSync(join(journal, 'junk.json'), 'not json at all');
  writeFileSync(join(journal, 'notes.txt'), 'hello');
  intent('unknown-op', { op: 'teleport', session: 'j1' });
  intent('unsafe-name', { op: 'create', session: '../../victim' });
  symlinkSync(join(victim, 'root', 'keep.txt'), join(journal, 'linked.json'));
  const doc = json(pdb(store, ['doctor', '--json']));
  assert.equal(
    doc.findings.map((f: { kind: string; id: string }) => `${f.kind} ${f.id}`),
    ['bad-intent junk.json', 'bad-intent linked.json', 'bad-intent notes.txt', 'bad-intent unknown-op.json', 'bad-intent unsafe-name.json'],
  );
  const dry = pdb(store, ['gc', '--dry-run']);
  assert.is(dry.code, 0, dry.stderr);
  assert.is(readdirSync(journal).length, 5, 'a dry run moves nothing');
  const gc = pdb(store, ['gc']);
  assert.is(gc.code, 0, gc.stderr);
  assert.equal(readdirSync(journal), []);
  assert.is(readdirSync(join(store, 'quarantine', 'journal')).length, 5);
  assert.is(readFileSync(join(victim, 'root', 'keep.txt'), 'utf8'), 'keep', 'the unsafe intent was not followed');
  assert.ok(existsSync(join(store, 'sessions', 'j1', 'root', 'a.txt')), 'the session named by the unknown op is untouched');
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
});

test('a lease directory replaced by a symlink is never followed: files outside survive checkpoint, doctor, gc and discard', () => {
  const { dir, src, store } = setup();
  json(pdb(store, ['create', 'l1', '--from', src, '--json']));
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'precious.txt'), 'keep');
  // Files that look like stale leases of a dead process: breaking them through the link would delete them.
  writeFileSync(join(outside, 'exclusive.json'), JSON.stringify({ pid: 2 ** 22 + 1, pidStart: null }));
  writeFileSync(join(outside, 'writer-1-ab.json'), JSON.stringify({ pid: 2 ** 22 + 1, pidStart: null }));
  const lease = join(store, 'sessions', 'l1', 'lease');
  rmSync(lease, { recursive: true, force: true });
  symlinkSync(outside, lease);
  pdb(store, ['doctor']);
  pdb(store, ['gc']);
  assert.equal(readdirSync(outside).sort(), ['exclusive.json', 'precious.txt', 'writer-1-ab.json']);
  json(pdb(store, ['checkpoint', 'l1', '--json']));
  assert.is(pdb(store, ['discard', 'l1']).code, 0);
  assert.equal(readdirSync(outside).sort(), ['exclusive.json', 'precious.txt', 'writer-1-ab.json']);
});

test('temp names are parsed in their structured form only: a live owner is never removed, an unknown name is reported, not deleted', () => {
  const { src, store } = setup();
  json(pdb(store, ['create', 'x1', '--from', src, '--json']));
  const tmp = join(store, 'tmp');
  const live = `base-tree.${process.pid}.${processStartTime(process.pid) ?? 'x'}.abc123`;
  mkdirSync(join(tmp, live));
  writeFileSync(join(tmp, live, 'f'), 'being built');
  mkdirSync(join(tmp, `base-tree-${process.pid}-abc123`)); // an old-style name: "tree" is no pid
  mkdirSync(join(tmp, `base-tree.${2 ** 22 + 1}.x.dead01`));
  const doc = json(pdb(store, ['doctor', '--json']));
  assert.equal(doc.findings.map((f: { kind: string; id: string; fix: string | null }) => `${f.kind} ${f.id} ${f.fix}`).sort(), [
    `temp-file base-tree.${2 ** 22 + 1}.x.dead01 gc`,
    `unknown-temp base-tree-${process.pid}-abc123 null`,
  ]);
  assert.is(pdb(store, ['gc']).code, 0);
  assert.equal(readdirSync(tmp).sort(), [`base-tree-${process.pid}-abc123`, live].sort());
  unlinkSync(join(tmp, live, 'f'));
});

test.run();
