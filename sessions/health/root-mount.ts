// A mount at a session root that its backend did not make (a bind mount, say) hides the session's
// own files: run and checkpoint would work in (and record) whatever is mounted there, and a
// discard that cannot move the directory would delete through it. So every command that uses or
// removes a session checks /proc/self/mountinfo first: overlay and AgentFS mount at the root
// themselves (their table row's `rootMount`), btrfs-snapshot's subvolume is no mount, and anything
// else mounted there is E_SESSION_DAMAGED, naming the mount, with `umount ROOT` as the way out.
import { backendRow } from '../../backends/table.js';
import { PdbError } from '../../model/errors.js';
import { mountTable, type MountEntry } from '../../model/os/mounts.js';
import { realpathOr } from '../../model/paths.js';
import { sessionDir, sessionRoot } from '../records/session-record.js';
import type { ObjectStore } from '../../model/store/object-store.js';

/** Is `m` a mount `backend` makes at its session roots? */
function ownMount(backend: string | null, m: MountEntry): boolean {
  const own = backend ? (backendRow(backend)?.traits.rootMount ?? null) : null;
  return own !== null && (m.fsType === own || m.fsType.startsWith(`${own}.`));
}

/**
 * E_SESSION_DAMAGED when something its backend did not make is mounted at the session's root
 * (`use`: run, checkpoint, restore); for `discard` and `gc` also anything mounted below the
 * session's directory, which removing it would go through.
 */
export function assertNoForeignMount(store: ObjectStore, name: string, backend: string | null, use: 'use' | 'discard' | 'gc'): void {
  const root = realpathOr(sessionRoot(store, name));
  const dir = realpathOr(sessionDir(store, name));
  const at = mountTable().filter((m) =>
    use === 'use' ? m.mountPoint === root : m.mountPoint === dir || m.mountPoint.startsWith(`${dir}/`),
  );
  // The last mount at a point is the visible one; each is judged on its own (a bind under an overlay counts too).
  const foreign = at.filter((m) => !(m.mountPoint === root && ownMount(backend, m)));
  if (foreign.length === 0) return;
  const m = foreign[foreign.length - 1]!;
  const what = `${m.fsType} from ${m.source}${m.root !== '/' ? ` (${m.root})` : ''}`;
  const where = m.mountPoint === root ? `at the root of session "${name}" (${root})` : `below session "${name}" at ${m.mountPoint}`;
  const then = { use: 'the session is as the store made it again', discard: `pdb-env discard ${name} finishes`, gc: 'pdb-env gc finishes' }[
    use
  ];
  throw new PdbError(
    'E_SESSION_DAMAGED',
    `${what} is mounted ${where}, and session "${name}"'s backend (${backend ?? 'unknown'}) did not mount it: ${use === 'use' ? 'nothing runs in it or is recorded from it' : 'nothing is removed through it'}`,
    { path: m.mountPoint, hint: `umount ${m.mountPoint}; then ${then}.` },
  );
}
