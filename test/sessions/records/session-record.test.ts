import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

test('a record that cannot be read is E_RECORD_CORRUPT naming the file, whatever is wrong with it; list shows it damaged', async () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'a\n' });
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  const file = join(svc.sessionDir('s'), 'session.json');
  const good = JSON.parse(readFileSync(file, 'utf8'));
  const damages: Array<[string, RegExp]> = [
    ['', /not JSON/],
    [JSON.stringify({ ...good, name: 'other' }), /names session "other"/],
    [JSON.stringify({ ...good, state: 'weird' }), /unknown state "weird"/],
    [JSON.stringify({ ...good, base: 'nope' }), /no base digest/],
    [JSON.stringify({ ...good, version: 2 }), /unknown version 2/],
    [JSON.stringify({ ...good, lastCheckpoint: { snapshot: 'x' } }), /malformed last checkpoint/],
    ['null', /not a JSON object/],
  ];
  for (const [text, why] of damages) {
    writeFileSync(file, text);
    try {
      await svc.readSession('s');
      assert.unreachable(text);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_RECORD_CORRUPT'), String(err));
      assert.match((err as Error).message, why);
      assert.match((err as Error).message, /sessions\/s\/session\.json/);
      assert.match((err as { hint: string }).hint, /pdb-env discard s/);
    }
    const [listed] = await svc.list();
    assert.equal([listed!.name, listed!.state, listed!.backend], ['s', 'damaged', null]);
  }
  mkdirSync(svc.sessionDir('bare'));
  const bare = (await svc.list()).find((s) => s.name === 'bare')!;
  assert.ok(bare.state === 'damaged' && /has no record/.test(bare.damage));
  writeFileSync(file, JSON.stringify(good));
  assert.equal(
    (await svc.list()).map((s) => [s.name, s.state]),
    [
      ['bare', 'damaged'],
      ['s', 'ready'],
    ],
  );
});

test.run();
