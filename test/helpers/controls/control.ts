// Negative controls: TEST-ONLY backends, each wrong in exactly one way, written as any user's own
// backend module is (a default export implementing backends/types.ts, loaded by path). Each makes
// the session with the copy backend of docs/your-backend.md, then does its one wrong thing, and records the stat
// signature of every file as it left it, so a checkpoint that trusts recorded signatures would vouch
// for the wrong bytes. The oracle must catch each one alone (test/harness/controls.test.ts).
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import type { Backend, BackendContext, CreatedSession } from '../../../backends/types.js';
import { RACY_WINDOW_MS, statSignature } from '../../../model/scan/tree-index.js';
import type { Digest } from '../../../model/canonical-json.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { REPO_ROOT } from '../index.js';

/** What a control does to a freshly copied root; returns the relative paths it made wrong. */
export type Wrongness = (root: string, snapshot: Snapshot) => Promise<string[]>;

/** Text-like files: the ones the content controls change, as no step of the workloads reads them as code. */
export const isTextFile = (path: string): boolean => /\.(md|txt)$/.test(path);

/** The copy backend of docs/your-backend.md, which every control starts from. */
const COPY_BACKEND = join(REPO_ROOT, 'test', 'fixtures', 'backends', 'copy-backend.mjs');

async function copySnapshot(ctx: BackendContext, snapshot: Snapshot, digest: Digest, root: string, sessionDir: string): Promise<number> {
  const copy = ((await import(pathToFileURL(COPY_BACKEND).href)) as { default: Backend }).default;
  return (await copy.createSession(ctx, snapshot, digest, root, sessionDir)).files ?? 0;
}

/** Every file's signature as it is now, after the racy window has passed (so a checkpoint would trust each one). */
async function signaturesOf(root: string, snapshot: Snapshot): Promise<Map<string, string>> {
  await sleep(RACY_WINDOW_MS * 2);
  const sigs = new Map<string, string>();
  for (const e of snapshot.entries) {
    if (e.kind !== 'file') continue;
    const st = await lstat(join(root, e.path)).catch(() => null);
    if (st?.isFile()) sigs.set(e.path, statSignature(st));
  }
  return sigs;
}

export function controlBackend(name: string, summary: string, wrong: Wrongness): Backend {
  return {
    name,
    experimental: true,
    testOnly: true,
    summary: `TEST ONLY negative control: ${summary}`,
    capabilities: {
      constantTimeCreate: false,
      sharesExtents: false,
      needsRemount: false,
      carriesFullSnapshot: true,
      securityIsolation: false,
    },
    async probe() {
      return { available: true, reason: null, detail: 'test-only negative control', evidence: { testOnly: true } };
    },
    async materializeBase() {},
    async createSession(ctx, snapshot, digest, root, sessionDir): Promise<CreatedSession> {
      const files = await copySnapshot(ctx, snapshot, digest, root, sessionDir);
      const changed = await wrong(root, snapshot);
      if (changed.length === 0) throw new Error(`${name}: the fixture has nothing this control can make wrong`);
      return { state: { wrong: changed.length }, files, cloneObserved: null, sigs: await signaturesOf(root, snapshot) };
    },
    async resume() {},
    async release() {},
  };
}
