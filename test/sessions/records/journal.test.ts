import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { storePaths } from '../../../model/store/object-store.js';
import { Journal, parseIntent } from '../../../sessions/records/journal.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const DEAD = 2 ** 22 + 1;
const good = (id: string, extra: object = {}) =>
  JSON.stringify({
    id,
    op: 'create',
    session: 's',
    pid: DEAD,
    pidStart: null,
    startedAt: 'now',
    detail: { backend: 'full-copy' },
    ...extra,
  });

test('parseIntent accepts a well-formed intent and says why anything else is not one', () => {
  const intent = parseIntent('x-1.json', good('x-1'));
  assert.ok(typeof intent !== 'string');
  assert.equal([intent.op, intent.session, intent.pid], ['create', 's', DEAD]);
  const bad: Array<[string, string, RegExp]> = [
    ['x.json', '', /not JSON/],
    ['x.json', '[1]', /id does not match/],
    ['y.json', good('x'), /id does not match/],
    ['x.json', good('x', { op: 'teleport' }), /unknown operation "teleport"/],
    ['x.json', good('x', { session: '../../x' }), /unsafe session name/],
    ['x.json', good('x', { env: 'a/b' }), /unsafe env name/],
    ['x.json', good('x', { pid: 0 }), /no owner pid/],
    ['../x.json', good('../x'), /id does not match/],
  ];
  for (const [name, text, why] of bad) assert.match(String(parseIntent(name, text)), why, `${name} ${text}`);
});

test('scan separates intents from bad entries, never reading through a symlink; quarantine moves an entry aside', async () => {
  const root = join(t.dir, 'store');
  const paths = storePaths(root);
  for (const d of [paths.journal, paths.tmp]) mkdirSync(d, { recursive: true });
  writeFileSync(join(t.dir, 'outside.json'), good('outside'));
  const journal = new Journal(paths);
  const mine = await journal.begin('checkpoint', { session: 's' });
  writeFileSync(join(paths.journal, 'dead-1.json'), good('dead-1'));
  writeFileSync(join(paths.journal, 'junk.json'), '{');
  symlinkSync(join(t.dir, 'outside.json'), join(paths.journal, 'outside.json'));
  const { intents, bad } = await journal.scan();
  assert.equal(
    intents.map((i) => [i.id, i.live]),
    [
      ['dead-1', false],
      [mine.id, true],
    ].sort(),
  );
  assert.equal(bad, [
    { file: 'junk.json', reason: 'not JSON' },
    { file: 'outside.json', reason: 'a symlink' },
  ]);
  await journal.quarantine('outside.json');
  await journal.quarantine('junk.json');
  assert.equal(readdirSync(join(paths.quarantine, 'journal')).length, 2);
  assert.equal(readdirSync(join(t.dir)).includes('outside.json'), true, 'the link target is untouched');
  await journal.end(mine);
  await journal.remove('dead-1');
  assert.equal(readdirSync(paths.journal), []);
});

test('an intent that cannot be written is a typed error and leaves nothing', async () => {
  const paths = storePaths(join(t.dir, 'nowhere'));
  try {
    await new Journal(paths).begin('create', { session: 's' });
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_IO'), String(err));
    assert.match((err as Error).message, /writing failed: .*nowhere\/journal/);
  }
});

test.run();
