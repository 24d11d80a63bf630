import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AGENTFS_BIN_ENV, PINNED_AGENTFS_SHA256, agentfsBackend, probeAgentfs } from '../../backends/agentfs.js';
import { tempDir } from '../helpers.js';

const t = tempDir('pdb-agentfs-');
test.after(() => t.cleanup());

function fakeBinary(name: string): string {
  const p = join(t.dir, name);
  writeFileSync(p, '#!/bin/sh\necho not-agentfs\n');
  chmodSync(p, 0o755);
  return p;
}

test('no binary: E_AGENTFS_MISSING', async () => {
  const r = await probeAgentfs({ PATH: join(t.dir, 'empty-path') });
  assert.is(r.available, false);
  assert.is(r.reason, 'E_AGENTFS_MISSING');
  const r2 = await probeAgentfs({ [AGENTFS_BIN_ENV]: join(t.dir, 'nope'), PATH: '' });
  assert.is(r2.reason, 'E_AGENTFS_MISSING');
});

test('a binary whose sha256 is not pinned is refused with E_AGENTFS_CHECKSUM (env and PATH)', async () => {
  const bin = fakeBinary('agentfs');
  const sha = createHash('sha256').update(readFileSync(bin)).digest('hex');
  assert.not.ok(PINNED_AGENTFS_SHA256.includes(sha));
  const viaEnv = await probeAgentfs({ [AGENTFS_BIN_ENV]: bin });
  assert.is(viaEnv.reason, 'E_AGENTFS_CHECKSUM');
  assert.is(viaEnv.evidence.sha256, sha);
  const viaPath = await probeAgentfs({ PATH: t.dir });
  assert.is(viaPath.reason, 'E_AGENTFS_CHECKSUM');
});

test('the checksum gate accepts exactly the pinned value', async () => {
  const bin = fakeBinary('agentfs-pinned');
  const sha = createHash('sha256').update(readFileSync(bin)).digest('hex');
  assert.is((await probeAgentfs({ [AGENTFS_BIN_ENV]: bin }, [sha])).available, true);
  assert.is((await probeAgentfs({ [AGENTFS_BIN_ENV]: bin }, [sha.replace(/^./, sha[0] === '0' ? '1' : '0')])).reason, 'E_AGENTFS_CHECKSUM');
});

test('the registered backend refuses to create without a pinned release', async () => {
  try {
    await agentfsBackend.createSession({} as never, {} as never, 'sha256:00' as never, t.dir, t.dir);
    assert.unreachable();
  } catch (err) {
    assert.is((err as { code?: string }).code, 'E_BACKEND_UNAVAILABLE');
  }
});

test.run();
