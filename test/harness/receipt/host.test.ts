// The host id: one machine, one id, whoever runs pdb-env and whatever HOME or XDG say; read from
// the machine id (IOPlatformUUID on macOS), hashed with a per-project salt, never shown itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  HOST_ID_SALT,
  hostFingerprint,
  hostIdOf,
  machineId,
  machineInstance,
  type MachineIdSources,
} from '../../../harness/receipt/host.js';
import { tempDir } from '../../helpers/index.js';

const IOREG = `+-o J314sAP  <class IOPlatformExpertDevice, id 0x100000227, registered, matched, active, busy 0 (191 ms), retain 32>
    {
      "IOPlatformSerialNumber" = "ABCDEFGH12"
      "IOPlatformUUID" = "5A8E3A1C-2B4D-4E6F-8A9B-0C1D2E3F4A5B"
    }`;

function sources(over: Partial<MachineIdSources>): MachineIdSources {
  return { platform: 'linux', readFile: () => null, ioreg: () => null, hostname: () => 'box-17', instance: () => null, ...over };
}

test('linux: /etc/machine-id, then D-Bus; macOS: IOPlatformUUID; else the host name, said so', () => {
  const files: Record<string, string> = { '/etc/machine-id': 'f1e2d3c4b5a6978812345678abcdef01\n' };
  assert.equal(machineId(sources({ readFile: (p) => files[p] ?? null })), { id: 'f1e2d3c4b5a6978812345678abcdef01', source: 'machine-id' });
  assert.equal(machineId(sources({ readFile: (p) => (p === '/var/lib/dbus/machine-id' ? 'abc\n' : null) })), {
    id: 'abc',
    source: 'machine-id',
  });
  assert.equal(machineId(sources({ platform: 'darwin', ioreg: () => IOREG })), {
    id: '5A8E3A1C-2B4D-4E6F-8A9B-0C1D2E3F4A5B',
    source: 'platform-uuid',
  });
  assert.equal(machineId(sources({})), { id: 'box-17', source: 'hostname' });
});

test('the id is a salted sha256: stable, 64 hex, not the machine id, and salted for this project', async () => {
  const m = { id: 'f1e2d3c4b5a6978812345678abcdef01', source: 'machine-id' as const };
  const id = hostIdOf(m);
  assert.match(id, /^[0-9a-f]{64}$/);
  assert.is(hostIdOf(m), id);
  assert.not.ok(id.includes(m.id));
  const { createHash } = await import('node:crypto');
  assert.is.not(id, createHash('sha256').update(m.id).digest('hex'), 'a bare hash of the machine id would match other tools');
  assert.ok(HOST_ID_SALT.startsWith('pdb-env'));
});

test('two machines of one image (one machine id) get two host ids from their instance ids; one machine keeps its own', () => {
  const t = tempDir();
  try {
    const image = { readFile: (p: string) => (p === '/etc/machine-id' ? '3d1219c7c4c5404aaa1f6d2a48adfda4\n' : null) };
    const [fileA, fileB] = [join(t.dir, 'a', 'host-instance'), join(t.dir, 'b', 'host-instance')];
    const a = machineId(sources({ ...image, instance: () => machineInstance(fileA) }));
    const b = machineId(sources({ ...image, instance: () => machineInstance(fileB) }));
    assert.is(a.source, 'machine-id+instance');
    assert.is.not(hostIdOf(a), hostIdOf(b), 'one image, two machines, two ids');
    const v2 = machineId(sources(image));
    assert.is(v2.source, 'machine-id');
    assert.is.not(hostIdOf(a), hostIdOf(v2));
    // The same machine again: the file is read, not drawn anew; it is readable by every user.
    assert.is(hostIdOf(machineId(sources({ ...image, instance: () => machineInstance(fileA) }))), hostIdOf(a));
    assert.match(readFileSync(fileA, 'utf8'), /^[0-9a-f]{32}\n$/);
    assert.is(statSync(fileA).mode & 0o777, 0o644);
    // A damaged file is drawn again rather than trusted.
    writeFileSync(fileA, 'not an id\n');
    assert.is.not(hostIdOf(machineId(sources({ ...image, instance: () => machineInstance(fileA) }))), hostIdOf(a));
    // Where it cannot be made (a folder nobody may write), there is none, and the source says so.
    const locked = join(t.dir, 'locked');
    mkdirSync(locked);
    chmodSync(locked, 0o555);
    if (process.getuid?.() !== 0) assert.is(machineInstance(join(locked, 'x', 'host-instance')), null);
    assert.is(machineInstance(join(t.dir, 'file-not-dir', 'host-instance').replace('file-not-dir', 'a/host-instance')), null);
  } finally {
    t.cleanup();
  }
});

test('HOME and XDG do not change the host id (they used to hold its salt)', async () => {
  const t = tempDir();
  const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
  try {
    const a = await hostFingerprint(t.dir, [0.5, 0.4, 0.3]);
    process.env.HOME = t.dir;
    process.env.XDG_CONFIG_HOME = t.dir;
    const b = await hostFingerprint(t.dir, [1, 1, 1]);
    assert.is(b.hostId, a.hostId);
    assert.is(b.hostIdSource, a.hostIdSource);
    assert.equal(b.loadAverage, [1, 1, 1]);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    t.cleanup();
  }
});

test.run();
