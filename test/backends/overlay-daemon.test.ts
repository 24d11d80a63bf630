// An overlay checkpoint through a daemon that watches session roots (`daemon start --watch`,
// model/scan/watch.ts) still asks the upper dir what can have changed: the watch is not set on an
// overlay's root (its writes are not known to reach inotify there), and the merged tree is not
// walked whole. The daemon's process is this one: watchSessionRoots() is what the daemon calls.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nativeUnavailable } from '../../model/scan/scanner.js';
import { unwatchAll, watchSessionRoots } from '../../model/scan/watch.js';
import { SessionService } from '../../sessions/service.js';
import { isRoot, skipTest, tempDir } from '../helpers/index.js';

const t = tempDir();
let svc: SessionService | null = null;
test.after(async () => {
  unwatchAll();
  if (svc) await svc.discard('d', { force: true }).catch(() => {}); // unmounts
  t.cleanup();
});

test("overlay through the daemon's watch: the walk follows the upper dir, equal to a --verify walk", async () => {
  if (!isRoot()) return skipTest('overlay through the daemon', 'root', 'mounting an overlay needs root');
  const why = nativeUnavailable() ?? (process.platform === 'linux' ? null : 'inotify is Linux only');
  if (why) return skipTest('overlay through the daemon', 'native-scan', why);
  const src = join(t.dir, 'src');
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(src, `d${d}`), { recursive: true });
    for (let f = 0; f < 10; f++) writeFileSync(join(src, `d${d}`, `f${f}.txt`), `${d} ${f}\n`);
  }
  svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  const probe = await svc.probe('overlay', src);
  if (!probe.available) return skipTest('overlay through the daemon', 'overlay', probe.detail);
  assert.ok(watchSessionRoots(), 'this process watches session roots, as the daemon does');
  const s = await svc.create('d', { from: src, backend: 'overlay' });
  for (let round = 0; round < 3; round++) {
    writeFileSync(join(s.root, `d${round}`, 'f1.txt'), `changed in round ${round}\n`);
    writeFileSync(join(s.root, `new${round}.txt`), `new ${round}\n`);
    const cp = await svc.checkpoint('d');
    assert.is(cp.walked.by, 'backend', `round ${round}: walked ${cp.walked.by} (${cp.walked.reason})`);
    const full = await svc.checkpoint('d', { verify: true });
    assert.is(cp.snapshot, full.snapshot, `round ${round}: the same Snapshot as a --verify walk`);
  }
});

test.run();
