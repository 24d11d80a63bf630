// `pdb-env du`: each session's true disk cost, and the store's.
import { formatBytes } from '../../model/progress.js';
import type { DuResult } from '../../sessions/service.js';
import { emit, short, table } from '../output.js';
import { openService, type CommandDefinitions, type DefineCommand } from '../context.js';

const bytes = (n: number | null) => (n === null ? '-' : formatBytes(n));

/** The du table, what could not be measured and why, then the store. */
export function duText(r: DuResult): string {
  const lines: string[] = [];
  if (r.sessions.length === 0) lines.push('no sessions (pdb-env create NAME makes one)');
  else
    lines.push(
      table([
        ['SESSION', 'BACKEND', 'EXCLUSIVE', 'SHARED', 'MEASURED BY'],
        ...r.sessions.map((s) => [s.name, s.backend ?? '-', bytes(s.exclusiveBytes), bytes(s.sharedBytes), s.method ?? s.reason ?? '-']),
      ]),
    );
  const notes = r.sessions.flatMap((s) =>
    !s.measured
      ? [`  ${s.name}: not measured: ${s.detail}`]
      : s.inlineBytes
        ? [`  ${s.name}: ${formatBytes(s.inlineBytes)} of small files inline in btrfs metadata, shared or not, is in neither figure`]
        : [],
  );
  if (notes.length) lines.push('', ...notes);
  const history = r.sessions.flatMap((s) =>
    s.history && s.history.checkpoints > 0
      ? [
          `  ${s.name}: ${s.history.checkpoints} checkpoint(s), gc keeps the last ${s.history.kept}: ${s.history.objects} objects (${formatBytes(s.history.bytes)}) not in its base`,
        ]
      : [],
  );
  if (history.length) lines.push('', 'history (pdb-env log NAME):', ...history);
  const st = r.store;
  const families = st.bases.map(
    (b) =>
      `${short(b.digest)} ${formatBytes(b.bytes)}: ${b.families.map((f) => f.family).join(', ')}; sessions: ${b.sessions.join(', ') || 'none'}`,
  );
  lines.push(
    '',
    `store ${st.root}`,
    `  objects  ${st.objects} (${formatBytes(st.objectBytes)})`,
    `  bases    ${st.bases.length} (${formatBytes(st.baseBytes)})${families.map((f) => `\n           ${f}`).join('')}`,
    `  other    ${formatBytes(st.otherBytes)} (journal, temp files, source indexes, quarantine)`,
    st.gc.skipped
      ? `  gc       not counted: ${st.gc.skipped}`
      : `  gc       would free ${formatBytes(st.gc.freeBytes)} now (${st.gc.objects} objects, ${st.gc.bases} bases): pdb-env gc`,
  );
  return lines.join('\n');
}

const du: DefineCommand<'du'> = (cmd) =>
  cmd
    .argument('[name]', 'only this session (default: every session)')
    .addHelpText(
      'after',
      `
Per session, EXCLUSIVE is what only that session holds (what discarding it frees) and
SHARED what it holds with its base or other sessions. Both are physical bytes (allocated
blocks, extents), measured by the session's backend, never estimated:
  full-copy, git-worktree  st_blocks: all its own (files hard-linked from outside are shared)
  reflink, btrfs-snapshot  FIEMAP extents (filefrag): an extent not flagged shared is its own
  overlay                  the upper dir (FIEMAP on btrfs/XFS, where a copy-up is a clone),
                           and the whole lower base as shared
A backend that cannot measure (apfs-clone, agentfs) says why. Plain du counts every
cloned or overlaid byte as if it were private. EXCLUSIVE includes the session's record,
tree index and private temp dir. Inodes and filesystem metadata are in neither figure.

Then the store: its objects, its materialized bases and what pdb-env gc would free now.
pdb-env list shows each session's EXCLUSIVE as du last measured it.

Example:
  pdb-env du
  pdb-env du agent-a --json`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const r = await (await openService(o.store)).du(name);
      emit(o.json === true, r, () => duText(r));
    });

export const commands: CommandDefinitions<'du'> = { du };
