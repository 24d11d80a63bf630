import { listBackends, probeBackend } from '../../backends/registry.js';
import { ObjectStore } from '../../model/object-store.js';
import { SessionService } from '../../sessions/service.js';
import { resolveStoreDir } from '../../sessions/store-location.js';
import { emit, table } from '../output.js';
import type { DefineCommand } from '../program.js';
import { openService } from './sessions.js';

const backends: DefineCommand = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Probes every backend against the store's filesystem. An available backend lists its
declared capabilities; an unavailable one carries its typed reason and no capabilities
(agentfs: E_AGENTFS_MISSING, E_AGENTFS_CHECKSUM or E_AGENTFS_PROBE until a binary pinned with
PDB_ENV_AGENTFS_SHA256 or <store>/agentfs.json passes a trial mount). Every entry says
securityIsolation: false.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const store = await ObjectStore.init(resolveStoreDir({ store: o.store, forCreate: true }));
      const svc = new SessionService(store);
      const reports = await Promise.all(listBackends().map((b) => probeBackend(b, svc.backendContext(process.cwd()))));
      emit(
        o.json === true,
        { backends: reports },
        () =>
          table([
            ['BACKEND', 'AVAILABLE', 'REASON', 'NOTE'],
            ...reports.map((r) => [
              r.name + (r.experimental ? ' (experimental)' : ''),
              r.available ? 'yes' : 'no',
              r.reason ?? '-',
              r.detail,
            ]),
          ]) + '\n\nsecurityIsolation: false for every backend (workspace isolation for trusted agents, not a sandbox)',
      );
    });

const doctor: DefineCommand = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Lists abandoned intents, unfinished sessions, stale temp files and active leases.
pdb-env gc finishes or removes what is marked "gc".`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const svc = await openService(o.store);
      const findings = await svc.doctor();
      emit(o.json === true, { store: svc.store.paths.root, findings }, () =>
        findings.length === 0
          ? 'store is healthy'
          : table([['KIND', 'ID', 'FIX', 'DETAIL'], ...findings.map((f) => [f.kind, f.id, f.fix ?? '-', f.detail])]),
      );
    });

const gc: DefineCommand = (cmd) =>
  cmd
    .option('--dry-run', 'list what would be done, change nothing')
    .addHelpText(
      'after',
      `
Undoes interrupted creates, finishes interrupted discards, removes dead temp files.
Objects are never removed.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const dryRun = o.dryRun === true;
      const r = await (await openService(o.store)).gc({ dryRun });
      emit(o.json === true, r, () =>
        r.actions.length ? r.actions.map((a) => `${dryRun ? 'would ' : ''}${a}`).join('\n') : 'nothing to do',
      );
    });

const verify: DefineCommand = (cmd, ctx) =>
  cmd.addHelpText('after', '\nExits 1 and lists the digests whose bytes no longer match.').action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const r = await (await openService(o.store)).verify();
    emit(o.json === true, r, () =>
      r.corrupt.length
        ? `E_OBJECT_CORRUPT: ${r.corrupt.length} of ${r.checked} objects are corrupt:\n${r.corrupt.join('\n')}`
        : `${r.checked} objects verified`,
    );
    ctx.exitCode = r.corrupt.length ? 1 : 0;
  });

export const commands: Record<string, DefineCommand> = { backends, doctor, gc, verify };
