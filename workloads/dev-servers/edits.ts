// The two sessions' edits, the trees they lead to, and the paths the servers themselves write. Both
// edits are deterministic so the case session's result can equal the oracle's byte for byte.
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { Entry } from '../../model/snapshot.js';
import { isGenerated, readLaneFixtureFile } from '../dev-lane/fixture.js';

/** Served by each server from public/: the session name its run was given (PDB_ENV_SESSION). */
export const SESSION_MARKER = 'public/pdb-session.txt';

/**
 * Session A's edit is an HMR-accepted module of the Vite page (an "update" names it). Session B's is
 * the greeting module that both the Next.js page and A's Vite page import, so a leak of B's edit
 * into A would reach A's HMR channel too.
 */
export const DEV_SERVER_EDITS = {
  a: { path: 'src/vite/message.ts', module: '/src/vite/message.ts', text: 'Vite in session A, after its edit' },
  b: { path: 'src/lib/greeting.ts', module: '/src/lib/greeting.ts', text: 'Hello from session B after its edit, ' },
} as const;

/** The bytes of an edited file: A's replaces message.ts, B's rewrites the greeting in greeting.ts. */
export function editedBytes(role: 'a' | 'b'): Buffer {
  if (role === 'a') return Buffer.from(`export const message = '${DEV_SERVER_EDITS.a.text}';\n`);
  const original = readLaneFixtureFile('npm', DEV_SERVER_EDITS.b.path).toString('utf8');
  const edited = original.replace('`Hello, ', `\`${DEV_SERVER_EDITS.b.text}`);
  if (edited === original)
    throw new PdbError('E_SOURCE_CHANGED', `${DEV_SERVER_EDITS.b.path} of the npm-app fixture has no greeting to edit`);
  return Buffer.from(edited);
}

/**
 * What the servers write besides caches: the session marker, and next-env.d.ts, which `next dev`
 * rewrites to point at .next/dev/types. Globs for the harness; `isServerOutput` is the same rule.
 */
export const DEV_SERVER_VOLATILE = ['public/**', 'next-env.d.ts'];

export function isServerOutput(path: string): boolean {
  return path === 'public' || path.startsWith('public/') || path === 'next-env.d.ts' || isGenerated(path);
}

/** The compared sources of a session after its edit: the base with the edited file replaced. */
export function expectedSources(base: Entry[], role: 'a' | 'b'): Entry[] {
  const path = DEV_SERVER_EDITS[role].path;
  const bytes = editedBytes(role);
  const out = base.map((e) => (e.path === path && e.kind === 'file' ? { ...e, digest: sha256Digest(bytes), size: bytes.length } : e));
  if (!base.some((e) => e.path === path && e.kind === 'file'))
    throw new PdbError('E_SOURCE_CHANGED', `the base has no file ${path}; it is not the npm-app fixture`, { path });
  return out.filter((e) => !isServerOutput(e.path));
}
