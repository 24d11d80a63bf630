// Fault injection for the crash tests, compiled in and inert unless PDB_ENV_CRASH_AT is set: at the
// named step the process kills itself with SIGKILL (no finally block, no exit handler runs), the
// way a power cut or the OOM killer would stop it. The fault suite names every step in turn.

/** The steps at which a crash can be injected, in the order each operation reaches them. */
export const CRASH_POINTS = [
  'create:after-intent',
  'create:after-mkdir',
  'create:after-record',
  'create:after-base',
  'create:after-materialize',
  'create:after-ready',
  'create:after-env',
  'checkpoint:after-intent',
  'checkpoint:after-objects',
  'checkpoint:after-record',
  'publish:after-intent',
  'publish:after-head',
  'discard:after-intent',
  'discard:after-state',
  'discard:after-release',
  'discard:after-rename',
  'apply:after-intent',
  'apply:after-plan',
  'apply:after-first-rename',
  'apply:after-renames',
  'apply:after-staging',
  'restore:after-intent',
  'restore:after-safety',
  'restore:after-first-write',
  'restore:after-writes',
  'restore:after-record',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

/** Kill this process at `step` when PDB_ENV_CRASH_AT names it; otherwise do nothing. */
export function crashPoint(step: CrashPoint, env: NodeJS.ProcessEnv = process.env): void {
  if (env.PDB_ENV_CRASH_AT === step) process.kill(process.pid, 'SIGKILL');
}
