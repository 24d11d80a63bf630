import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { packageRoot } from '../../model/paths.js';
import { ObjectStore, REPAIR_HINT, STORE_MARKER } from '../../model/store/object-store.js';
import { formatBytes } from '../../model/progress.js';
import { SessionService, type Finding, type VerifyResult } from '../../sessions/service.js';
import { resolveStoreDir } from '../../sessions/records/store-location.js';
import { emit, table } from '../output.js';
import { openService, type CommandDefinitions, type DefineCommand } from '../context.js';

const backends: DefineCommand<'backends'> = (cmd) =>
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
      const { listBackends, probeBackend } = await import('../../backends/registry.js');
      // A read-only command makes no store (issue 41: one made here captured every later create below
      // it): where none is yet, the probes run in a throw-away store beside where it would be, removed after.
      const dir = resolveStoreDir({ store: o.store, forCreate: true });
      const scratch = existsSync(join(dir, STORE_MARKER)) ? null : scratchDirBeside(dir);
      try {
        const svc = new SessionService(scratch ? await ObjectStore.init(scratch) : ObjectStore.open(dir));
        const reports = await Promise.all((await listBackends()).map((b) => probeBackend(b, svc.backendContext(process.cwd()))));
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
      } finally {
        if (scratch) rmSync(scratch, { recursive: true, force: true });
      }
    });

/** A fresh directory in the nearest existing ancestor of `dir` (the filesystem the store would be on), else in the temp dir. */
function scratchDirBeside(dir: string): string {
  let at = dirname(dir);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    return mkdtempSync(join(at, '.pdb-env-probe-'));
  } catch {
    return mkdtempSync(join(tmpdir(), 'pdb-env-probe-'));
  }
}

const doctor: DefineCommand<'doctor'> = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Lists what a crash, a reboot or damage left: abandoned or bad journal intents,
unfinished and damaged sessions, stale locks and temp files, live leases, and
objects that are corrupt (quarantined by verify) or missing. What pdb-env gc fixes
is marked "gc"; the rest says what to run. The last line says which scanner walks
trees here: the native one (prebuilt for this platform, or built from source by
npm install where a C compiler is) or the JavaScript one (where neither loads, or
PDB_ENV_SCANNER=js). The lines before it say whether
commands and a plain checkpoint run their one-file bundles (made by the build)
or the modules themselves (no bundle was built with this dist, or
PDB_ENV_NO_BUNDLE=1), and whether overlay mounts and port probes are system
calls of the native addon or mount(8), umount(8) and Node's servers
(PDB_ENV_NATIVE_OS=off). Where no store is yet (no directory, or an empty one),
it says so and prints only those lines; a directory that is not a store is refused.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      // No store yet (nothing there, or an empty directory): nothing to find, and the lines about
      // this install still answer. Anything else that is not a store is refused, never read as one.
      const dir = resolveStoreDir({ store: o.store });
      let svc: SessionService | null = null;
      try {
        svc = await SessionService.open(dir); // what openService(o.store) opens: dir resolved once
      } catch (err) {
        if (!(err instanceof PdbError && err.code === 'E_STORE_INVALID' && isAbsentOrEmpty(dir))) throw err;
      }
      const findings = svc ? await svc.doctor() : [];
      const { scannerInfo } = await import('../../model/scan/scanner.js');
      const scanner = scannerInfo();
      // bundle.cjs itself stays a module of dist/cli (scripts/build-bundles.mjs says why).
      const { bundleState } = await import('../bundle.cjs');
      const checkpointBundle = bundleState('checkpoint');
      const cliBundle = bundleState('cli');
      const { nativeOs, loadNativeAddon } = await import('../../model/os/native.js');
      const native = nativeOs() !== null;
      // What a receipt records as provenance.buildDigest: a user compares it with a receipt's.
      const { readBuildDigest } = await import('../../harness/receipt/provenance.js');
      const buildDigest = readBuildDigest(packageRoot());
      const lines = [
        `commands: ${cliBundle.bundled ? 'bundle' : 'modules'} (${cliBundle.reason})`,
        `checkpoint: ${checkpointBundle.bundled ? 'bundle' : 'modules'} (${checkpointBundle.reason})`,
        `mounts and port probes: ${native ? 'system calls (native addon)' : `mount(8), umount(8) and net.Server (${process.env.PDB_ENV_NATIVE_OS === 'off' ? 'PDB_ENV_NATIVE_OS=off' : loadNativeAddon().reason})`}`,
        `scanner: ${scanner.scanner} (${scanner.scanner === 'native' ? `${scanner.reason}, ${scanner.threads} lstat threads` : scanner.reason === 'PDB_ENV_SCANNER=js' ? scanner.reason : `JavaScript fallback: ${scanner.reason}`})`,
        `build: ${buildDigest ?? 'no build under dist/'} (dist/ modules, bundles and code caches, and the native addon that loads)`,
      ];
      emit(
        o.json === true,
        { store: svc ? svc.store.paths.root : null, findings, buildDigest, checkpointBundle, cliBundle, nativeOs: native, scanner },
        () => `${svc ? doctorText(findings) : `no store here yet (${dir}): pdb-env create NAME makes one`}\n\n${lines.join('\n')}`,
      );
    });

function isAbsentOrEmpty(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function doctorText(findings: Finding[]): string {
  if (findings.length === 0) return 'store is healthy';
  const rows = table([['KIND', 'ID', 'FIX', 'DETAIL'], ...findings.map((f) => [f.kind, f.id, f.fix ?? '-', f.detail])]);
  const repairs = [
    ...new Set(
      findings.flatMap((f) =>
        f.repair ? [`  ${f.kind === 'missing-object' || f.kind === 'corrupt-object' ? 'objects' : f.id}: ${f.repair}`] : [],
      ),
    ),
  ];
  const gcable = findings.some((f) => f.fix === 'gc') ? '\n\npdb-env gc fixes what is marked "gc" (pdb-env gc --dry-run shows how).' : '';
  return `${rows}${gcable}${repairs.length ? `\n\nto repair:\n${repairs.join('\n')}` : ''}`;
}

const gc: DefineCommand<'gc'> = (cmd, ctx) =>
  cmd
    .addHelpText(
      'after',
      `
Undoes interrupted creates, finishes interrupted discards, breaks stale locks,
removes temp files of processes that are gone, and moves bad journal entries and
damaged session records to <store>/quarantine (a damaged session's files stay).
It never touches what a live process owns.

Then it frees space: objects and materialized bases that no root reaches are
removed. The roots: environment heads and every head they ever had, each live
session's base and checkpoints, the last import of each source, the base of a
create still running, and every pinned digest (pdb-env pin). It waits for running
creates and checkpoints (or skips the sweep and says so). The quarantine is kept.
--dry-run prints what would be freed, in bytes.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const dryRun = o.dryRun === true;
      const r = await (await openService(o.store)).gc({ dryRun });
      emit(o.json === true, r, () => {
        const actions = r.actions.length ? r.actions.map((a) => `${dryRun ? 'would ' : ''}${a}`).join('\n') : 'nothing to do';
        const freed = `${dryRun ? 'would free' : 'freed'} ${r.freed.bytes} bytes (${formatBytes(r.freed.bytes)})`;
        const text = `${actions}\n${freed}`;
        const failed = r.failed.map((f) => `  ${f.what}: ${f.code} ${f.message}${f.hint ? `\n    ${f.hint}` : ''}`);
        const notes = r.notes.length ? `\n\nstill to do by hand:\n${r.notes.map((n) => `  ${n}`).join('\n')}` : '';
        return `${text}${notes}${failed.length ? `\n\nfailed (skipped; everything else was done):\n${failed.join('\n')}` : ''}`;
      });
      // Everything else was done first: a failed step only decides the exit status.
      ctx.exitCode = r.failed.length > 0 ? 1 : 0;
    });

const pin: DefineCommand<'pin'> = (cmd) =>
  cmd
    .argument('[digest]', 'a Snapshot, Changeset or file object in the store (without it: list the pins)')
    .addHelpText(
      'after',
      `
Keeps DIGEST, and everything it reaches, through every gc until pdb-env unpin.
Without DIGEST, lists the pinned digests.

Example:
  pdb-env pin sha256:...`,
    )
    .action(async (digest, _o, command) => {
      const o = command.optsWithGlobals();
      const svc = await openService(o.store);
      if (digest === undefined) {
        const pins = await svc.pins();
        emit(o.json === true, { pins }, () => (pins.length ? pins.join('\n') : 'nothing is pinned'));
        return;
      }
      const r = await svc.pin(digest);
      emit(o.json === true, r, () => `pinned ${r.digest}`);
    });

const unpin: DefineCommand<'unpin'> = (cmd) =>
  cmd
    .argument('<digest>', 'a pinned digest')
    .addHelpText('after', '\nLets gc collect DIGEST again once nothing else reaches it. Exits 0 when it was not pinned.')
    .action(async (digest, _o, command) => {
      const o = command.optsWithGlobals();
      const r = await (await openService(o.store)).unpin(digest);
      emit(o.json === true, r, () => (r.wasPinned ? `unpinned ${r.digest}` : `${r.digest} was not pinned`));
    });

const verify: DefineCommand<'verify'> = (cmd, ctx) =>
  cmd
    .addHelpText(
      'after',
      `
Re-hashes every object, moves corrupt ones to <store>/quarantine (never deleted),
then lists every object a reachable Snapshot or Changeset needs that is missing.
Exits 1 when anything is corrupt or missing.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const r = await (await openService(o.store)).verify();
      emit(o.json === true, r, () => verifyText(r));
      ctx.exitCode = r.corrupt.length || r.missing.length || r.badHeads.length ? 1 : 0;
    });

function verifyText(r: VerifyResult): string {
  if (!r.corrupt.length && !r.missing.length && !r.badHeads.length) return `${r.checked} objects verified`;
  const out: string[] = r.badHeads.map((h) => `E_RECORD_CORRUPT: ${h.problem}`);
  if (r.corrupt.length)
    out.push(`E_OBJECT_CORRUPT: ${r.corrupt.length} of ${r.checked} objects are corrupt (moved to ${r.quarantine}):`, ...r.corrupt);
  if (r.missing.length)
    out.push(`E_OBJECT_MISSING: ${r.missing.length} objects are missing:`, ...r.missing.map((m) => `${m.digest}  ${m.ref}`));
  if (r.corrupt.length || r.missing.length) out.push('', REPAIR_HINT);
  return out.join('\n');
}

export const commands: CommandDefinitions<'store'> = { backends, doctor, gc, verify, pin, unpin };
