// A Snapshot stored as chunks (model/store/chunks.ts), damaged in the store (issue 55 item 5): one
// of its chunks, or its chunked record, flipped, truncated or deleted. verify names the object;
// restore to it, export of it and a checkpoint that follows it refuse with a typed error and write
// no wrong byte (the session root, the patch file, the session's record and the store's documents
// as they were); checkpoint --verify refuses a damaged chunk it shares, whichever document brought
// it, where a plain checkpoint trusts it. damage.test.ts covers the same for file objects and records.
import { chmodSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { diffEntries, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree, type TreeSpec } from '../../helpers/index.js';
import { objectFile, pdb } from '../../helpers/faults/fault-helpers.js';
import { filesOf } from '../../helpers/apply-fixture.js';

const t = tempDir('pdb-chunk-damage-');
test.after(() => t.cleanup());

type Damage = 'flip' | 'truncate' | 'delete';
type Part = 'chunk' | 'record';

/** A source big enough that its Snapshot is stored as chunks. */
function bigSource(): TreeSpec {
  const files: TreeSpec = {};
  for (let i = 0; i < 400; i++) files[`file-with-a-long-name-${i}.txt`] = `file ${i}\n`;
  return { 'a.txt': 'alpha\n', files };
}

function damage(file: string, how: Damage): void {
  chmodSync(file, 0o644);
  if (how === 'delete') return rmSync(file);
  if (how === 'truncate') truncateSync(file, Math.floor(readFileSync(file).length / 2));
  else {
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)] ^= 1;
    writeFileSync(file, bytes);
  }
  chmodSync(file, 0o444);
}

/** A session whose checkpoint 1's Snapshot is chunked, the root changed again since; then that Snapshot damaged. */
async function damagedCase(part: Part, how: Damage) {
  const dir = join(t.dir, `${part}-${how}`);
  const src = join(dir, 'src');
  writeTree(src, bigSource());
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  writeFileSync(join(s.root, 'a.txt'), 'checkpoint 1\n');
  const cp = await svc.checkpoint('s');
  const snap = cp.snapshot as Digest;
  assert.ok(svc.store.isChunked(snap), 'the Snapshot is stored as chunks');
  const parts = svc.store.chunkParts(snap);
  const chunk = parts[parts.length - 1]!;
  const victim = part === 'chunk' ? chunk : snap;
  damage(part === 'chunk' ? objectFile(store, chunk) : svc.store.chunkedPath(snap), how);
  writeFileSync(join(s.root, 'a.txt'), 'the user after checkpoint 1\n');
  writeFileSync(join(s.root, 'b.txt'), 'new since\n');
  return { dir, store, svc, root: s.root, snap, victim };
}

/** checkpoint --verify trusts no stored chunk: it refuses, typed, with the session's record and root as they were, or the Snapshot it records reads back whole. */
async function verifyingCheckpoint(
  c: Awaited<ReturnType<typeof damagedCase>>,
  part: Part,
  record: string,
  rootBefore: unknown,
  refused: (r: ReturnType<typeof pdb>, what: string) => void,
  problems: string[],
): Promise<void> {
  const checked = pdb(c.store, ['checkpoint', 's', '--verify', '--json']);
  if (checked.code !== 0) {
    refused(checked, 'checkpoint --verify');
    if (recordOf(c.store) !== record) problems.push("checkpoint --verify changed the session's record");
  } else {
    try {
      c.svc.store.getBytes((JSON.parse(checked.stdout) as { snapshot: Digest }).snapshot);
    } catch (err) {
      problems.push(`checkpoint --verify recorded a Snapshot that does not read back: ${String(err)}`);
    }
  }
  // The damaged chunk (the Snapshot's last) is one the base's Snapshot holds too: shared, so refused.
  if (part === 'chunk' && checked.code === 0) problems.push('checkpoint --verify recorded a Snapshot over a damaged chunk');
  if (JSON.stringify(await filesOf(c.root)) !== JSON.stringify(rootBefore)) problems.push('checkpoint --verify changed the root');
}

const recordOf = (store: string) => readFileSync(join(store, 'sessions', 's', 'session.json'), 'utf8');

for (const part of ['chunk', 'record'] as const)
  for (const how of ['flip', 'truncate', 'delete'] as const)
    test(`a ${part} of a chunked Snapshot ${how === 'flip' ? 'flipped' : how === 'truncate' ? 'truncated' : 'deleted'}: verify names it; restore, export and checkpoint refuse, typed, and write no wrong byte`, async () => {
      const c = await damagedCase(part, how);
      const verify = pdb(c.store, ['verify', '--json']);
      assert.is.not(verify.code, 0, `verify passed a damaged ${part}: ${verify.stdout}`);
      assert.ok(
        verify.stdout.includes(c.victim.slice('sha256:'.length, 'sha256:'.length + 12)),
        `verify does not name ${c.victim}: ${verify.stdout}`,
      );

      const rootBefore = await filesOf(c.root);
      const record = recordOf(c.store);
      const problems: string[] = [];
      const refused = (r: ReturnType<typeof pdb>, what: string) => {
        const code = r.stdout.trim().startsWith('{') ? (JSON.parse(r.stdout) as { error?: { code?: string } }).error?.code : undefined;
        if (r.code === 0 || !/^E_OBJECT_(CORRUPT|MISSING)$/.test(code ?? ''))
          problems.push(`${what}: exit ${r.code} ${code ?? r.stdout + r.stderr}`);
        if (/^\s+at /m.test(r.stderr)) problems.push(`${what}: a stack trace`);
      };

      const patch = join(c.dir, 'out.patch');
      refused(pdb(c.store, ['export', 's', '--patch', patch, '--json']), 'export --patch');
      if (existsSync(patch)) problems.push('export wrote a patch file');

      await verifyingCheckpoint(c, part, record, rootBefore, refused, problems);

      // A checkpoint that follows the damaged Snapshot refuses, typed; or writes a whole Snapshot;
      // or (a chunk it shares with the damaged one is trusted, not read back: docs/store.md) one
      // that verify names and every reader refuses, typed: it never passes as whole.
      const cp = pdb(c.store, ['checkpoint', 's', '--json']);
      if (cp.code !== 0) refused(cp, 'checkpoint');
      else {
        const made = JSON.parse(cp.stdout) as { snapshot: Digest };
        let entries: Entry[] | null = null;
        try {
          entries = (c.svc.store.getDocument(made.snapshot, 'Snapshot') as { entries: Entry[] }).entries;
        } catch (err) {
          if (!/E_OBJECT_(CORRUPT|MISSING)/.test(String((err as { code?: string }).code ?? err)))
            problems.push(`reading the new checkpoint: ${String(err)}`);
          const v = pdb(c.store, ['verify', '--json']);
          if (v.code === 0) problems.push('verify passes a new checkpoint that names a damaged chunk');
        }
        if (entries && diffEntries(entries, await filesOf(c.root)).length) problems.push('the new checkpoint is not the root');
      }
      const record2 = recordOf(c.store);
      const root2 = await filesOf(c.root);

      // Restore to the damaged Snapshot: refused, typed, with nothing written; or (the checkpoint put
      // the shared chunk right) the Snapshot is whole again and the root becomes it exactly.
      const restore = pdb(c.store, ['restore', 's', '--to', '1', '--json']);
      let whole = true;
      try {
        c.svc.store.getBytes(c.snap);
      } catch {
        whole = false;
      }
      if (restore.code !== 0 || !whole) {
        refused(restore, 'restore --to 1');
        if (JSON.stringify(await filesOf(c.root)) !== JSON.stringify(root2)) problems.push('restore changed the root');
        if (recordOf(c.store) !== record2) problems.push("restore changed the session's record");
      } else {
        const entries = (c.svc.store.getDocument(c.snap, 'Snapshot') as { entries: Entry[] }).entries;
        if (diffEntries(entries, await filesOf(c.root)).length) problems.push('the restored root is not checkpoint 1');
      }
      const after = pdb(c.store, ['verify', '--json']);
      if (after.code === 0 && !whole) problems.push('verify passes while checkpoint 1 is damaged');
      assert.equal(problems, [], problems.join('\n'));
    });

test("checkpoint --verify reads back each chunk it shares, one another session's Snapshot brought too: damaged, it is refused, typed; a plain checkpoint trusts it and verify names it", async () => {
  const dir = join(t.dir, 'shared-elsewhere');
  const src = join(dir, 'src');
  writeTree(src, bigSource());
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const a = await svc.create('a', { from: src });
  const b = await svc.create('b', { from: src });
  // The same change in both sessions, in the middle of the tree: a's Snapshot brings chunks the base's has not.
  const mid = join('files', 'file-with-a-long-name-200.txt');
  writeFileSync(join(a.root, mid), 'changed the same way\n');
  const one = await svc.checkpoint('a');
  assert.ok(svc.store.isChunked(one.snapshot), 'the Snapshot is stored as chunks');
  const inBase = new Set(svc.store.chunkParts(one.base));
  const brought = svc.store.chunkParts(one.snapshot).filter((d) => !inBase.has(d));
  assert.ok(brought.length > 0, "a's Snapshot brings chunks of its own");
  for (const d of brought) damage(objectFile(store, d), 'flip');
  writeFileSync(join(b.root, mid), 'changed the same way\n');
  const record = readFileSync(join(store, 'sessions', 'b', 'session.json'), 'utf8');
  const checked = pdb(store, ['checkpoint', 'b', '--verify', '--json']);
  assert.is.not(checked.code, 0, `checkpoint --verify recorded a Snapshot over damaged chunks: ${checked.stdout}`);
  assert.is((JSON.parse(checked.stdout) as { error: { code: string } }).error.code, 'E_OBJECT_CORRUPT');
  assert.is(readFileSync(join(store, 'sessions', 'b', 'session.json'), 'utf8'), record, "the session's record as it was");
  assert.equal((await svc.log('b')).checkpoints, [], 'no checkpoint logged');
  // A plain checkpoint trusts a chunk already stored (docs/store.md): the same Snapshot as a's, which verify names.
  const plain = pdb(store, ['checkpoint', 'b', '--json']);
  assert.is(plain.code, 0, plain.stdout);
  assert.is((JSON.parse(plain.stdout) as { snapshot: string }).snapshot, one.snapshot);
  const v = pdb(store, ['verify', '--json']);
  assert.is.not(v.code, 0);
  assert.ok(v.stdout.includes(one.snapshot.slice(7, 19)), v.stdout);
});

test.run();
