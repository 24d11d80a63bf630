// sessions/locks/operation.ts: the one handle of a session operation. The order is checked from
// the disk, not from the handle: which lease files exist when the intent is written and when it
// goes, what a refused or failed open leaves, and that release keeps an unfinished intent for gc.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { acquireLease } from '../../../sessions/locks/lease.js';
import { objectLeaseDir } from '../../../sessions/locks/object-lease.js';
import { openOperation } from '../../../sessions/locks/operation.js';
import { Journal, type Intent, type IntentOp } from '../../../sessions/records/journal.js';
import { SessionService } from '../../../sessions/service.js';
import type { StoreContext } from '../../../sessions/records/session-record.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-operation-');
test.after(() => t.cleanup());

let n = 0;
/** A fresh store with one session directory, and a journal that notes which leases exist at each write. */
async function fixture() {
  const svc = await SessionService.open(join(t.dir, `store${n++}`), { create: true });
  const dir = svc.sessionDir('s');
  mkdirSync(dir);
  const seen: string[] = [];
  const held = () => {
    const count = (d: string) => {
      try {
        return readdirSync(d).filter((f) => !f.startsWith('.')).length;
      } catch {
        return 0; // not made yet
      }
    };
    return `session ${count(join(dir, 'lease'))}, objects ${count(objectLeaseDir(svc.store))}`;
  };
  class Noting extends Journal {
    override async begin(op: IntentOp, fields: Parameters<Journal['begin']>[1], options: { sync?: boolean } = {}): Promise<Intent> {
      seen.push(`begin ${op} sync ${options.sync ?? true} (${held()})`);
      return super.begin(op, fields, options);
    }
    override async end(intent: Intent): Promise<void> {
      seen.push(`end ${intent.op} (${held()})`);
      return super.end(intent);
    }
  }
  const ctx: StoreContext = { store: svc.store, journal: new Noting(svc.store.paths) };
  return { svc, ctx, dir, seen, held, intents: async () => (await svc.journal.list()).map((i) => i.op) };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (!isPdbError(err)) throw err;
    return `${err.code}: ${err.message}`;
  }
  return 'ok';
}

test('open takes the session lease, then the object lease, then writes the intent; finish ends it before the leases go', async () => {
  const f = await fixture();
  const op = await openOperation(f.ctx, {
    session: { name: 's', dir: f.dir },
    lease: { kind: 'exclusive', purpose: 'checkpoint' },
    check: async () => void f.seen.push(`check (${f.held()})`),
    objects: 'checkpoint s',
    intent: { op: 'checkpoint', session: 's', sync: false },
  });
  assert.is(op.intent?.op, 'checkpoint');
  assert.equal(await f.intents(), ['checkpoint']);
  await op.finish();
  assert.equal(f.seen, [
    'check (session 1, objects 0)',
    'begin checkpoint sync false (session 1, objects 1)',
    'end checkpoint (session 1, objects 1)',
  ]);
  assert.equal([f.held(), await f.intents()], ['session 0, objects 0', []]);
  await op.release(); // nothing left to let go of
  await op.finish();
  assert.equal(f.seen.length, 3, 'a second finish ends nothing again');
});

test('release lets go of the leases and keeps an unfinished intent for gc; an intent can come later with begin', async () => {
  const f = await fixture();
  const op = await openOperation(f.ctx, {
    session: { name: 's', dir: f.dir },
    lease: { kind: 'writer', purpose: 'run x' },
    objects: 'create s',
  });
  assert.is(op.intent, null);
  assert.equal(f.seen, [], 'no intent unless asked');
  await op.begin({ op: 'create', session: 's', detail: { backend: 'full-copy' } });
  assert.equal(f.seen, ['begin create sync true (session 1, objects 1)']);
  await op.release();
  assert.equal([f.held(), await f.intents()], ['session 0, objects 0', ['create']]);
});

test('a busy session is refused with the lease message, and nothing else is taken or written', async () => {
  const f = await fixture();
  const other = await acquireLease(join(f.dir, 'lease'), 's', 'exclusive', 'checkpoint');
  const got = await code(
    openOperation(f.ctx, {
      session: { name: 's', dir: f.dir },
      lease: { kind: 'writer', purpose: 'run make' },
      objects: 'run',
      intent: { op: 'checkpoint', session: 's' },
    }),
  );
  assert.match(got, /^E_LEASE_BUSY: session "s" is busy: process \d+ holds a exclusive lease for checkpoint; run make was refused$/);
  await other.release();
  assert.equal([f.held(), f.seen], ['session 0, objects 0', []]);
});

test('a failed check or a failed intent write lets go of what was taken', async () => {
  const f = await fixture();
  const refused = openOperation(f.ctx, {
    session: { name: 's', dir: f.dir },
    lease: { kind: 'exclusive', purpose: 'checkpoint' },
    check: async () => {
      throw new Error('still running');
    },
    objects: 'checkpoint s',
  });
  assert.is(((await refused.catch((err: Error) => err)) as Error).message, 'still running');
  assert.is(f.held(), 'session 0, objects 0');
  // The journal replaced by a file: the intent cannot be written.
  rmSync(f.svc.store.paths.journal, { recursive: true });
  writeFileSync(f.svc.store.paths.journal, '');
  const failed = await code(
    openOperation(f.ctx, {
      session: { name: 's', dir: f.dir },
      lease: { kind: 'exclusive', purpose: 'checkpoint' },
      objects: 'checkpoint s',
      intent: { op: 'checkpoint', session: 's' },
    }),
  );
  assert.not.equal(failed, 'ok');
  assert.is(f.held(), 'session 0, objects 0');
});

test('await using lets go at the end of the block; a session gone meanwhile is E_SESSION_NOT_FOUND', async () => {
  const f = await fixture();
  {
    await using op = await openOperation(f.ctx, { session: { name: 's', dir: f.dir }, lease: { kind: 'discard' }, objects: 'x' });
    assert.is(f.held(), 'session 1, objects 1');
    await op.begin({ op: 'discard', session: 's' });
  }
  assert.equal([f.held(), await f.intents()], ['session 0, objects 0', ['discard']]);
  rmSync(f.dir, { recursive: true });
  assert.match(
    await code(openOperation(f.ctx, { session: { name: 's', dir: f.dir }, lease: { kind: 'discard' } })),
    /^E_SESSION_NOT_FOUND/,
  );
  assert.match(
    await code(openOperation(f.ctx, { session: { name: 's', dir: f.dir }, lease: { kind: 'exclusive', purpose: 'checkpoint' } })),
    /^E_SESSION_NOT_FOUND: session "s" is gone/,
  );
});

test.run();
