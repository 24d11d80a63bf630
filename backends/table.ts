// The built-in backends, one row each: the one place that names them. The names and their types,
// the registry, loading one backend alone (./load.ts), the probe cache, the Claude Code hook, the
// reports and the bundle script all read this table. Its only static import is a type, and each
// backend's module is imported only by its row's `load`, so reading a trait loads no backend:
// that is why reports (which never import a backend) may read it.
import type { Backend } from './types.js';

/** What a built-in backend is, apart from its code. */
export interface BackendTraits {
  /** Offered to users, but not yet evidence-grade (the backend object says the same). */
  readonly experimental: boolean;
  /** A negative control the oracle must catch: reachable only in tests, never offered. */
  readonly testOnly: boolean;
  /** Its sessions clone the base's files, so they should share extents: reports give it a fallback rate. */
  readonly cloneFamily: boolean;
  /** Its probe depends only on the host and the store's filesystem, so an available answer is cached (sessions/probe-cache.ts). */
  readonly probeCacheable: boolean;
  /**
   * The Claude Code hook's own pick when pdb-env.json names none, 1 tried first: backends whose
   * session is an ordinary directory that stays valid across a reboot. Null for overlay (a mount
   * that `pdb-env path` re-mounts, which Claude Code never calls), git-worktree (tracked files only)
   * and the experimental ones: taken only when pdb-env.json names them.
   */
  readonly hookRank: number | null;
  /** A plain checkpoint of its sessions runs from the checkpoint bundle, which inlines its module (scripts/build-bundles.mjs). */
  readonly checkpointInline: boolean;
  /**
   * The filesystem type it mounts at each session root (mountinfo's, `fuse` also matching
   * `fuse.*`), or null: any other mount there is not its own (sessions/health/root-mount.ts).
   */
  readonly rootMount: string | null;
}

/** One built-in backend: its traits, its module, and the loader of that module alone. */
export interface BackendRow {
  readonly traits: BackendTraits;
  /** Its module, relative to backends/ in dist (what `load` imports). */
  readonly module: string;
  /** Import its module alone. The path is written out in each row so the bundler sees it. */
  readonly load: () => Promise<Backend>;
}

export const BACKENDS = {
  'full-copy': {
    traits: {
      experimental: false,
      testOnly: false,
      cloneFamily: false,
      probeCacheable: false,
      hookRank: 3,
      checkpointInline: true,
      rootMount: null,
    },
    module: 'full-copy.js',
    load: () => import('./full-copy.js').then((m) => m.fullCopyBackend),
  },
  reflink: {
    traits: {
      experimental: false,
      testOnly: false,
      cloneFamily: true,
      probeCacheable: true,
      hookRank: 2,
      checkpointInline: true,
      rootMount: null,
    },
    module: 'reflink.js',
    load: () => import('./reflink.js').then((m) => m.reflinkBackend),
  },
  'btrfs-snapshot': {
    traits: {
      experimental: false,
      testOnly: false,
      cloneFamily: true,
      probeCacheable: true,
      hookRank: 1,
      checkpointInline: true,
      rootMount: null,
    },
    module: 'btrfs-snapshot.js',
    load: () => import('./btrfs-snapshot.js').then((m) => m.btrfsSnapshotBackend),
  },
  overlay: {
    traits: {
      experimental: false,
      testOnly: false,
      cloneFamily: false,
      probeCacheable: true,
      hookRank: null,
      checkpointInline: true,
      rootMount: 'overlay',
    },
    module: 'overlay.js',
    load: () => import('./overlay.js').then((m) => m.overlayBackend),
  },
  'apfs-clone': {
    traits: {
      experimental: true,
      testOnly: false,
      cloneFamily: true,
      probeCacheable: true,
      hookRank: null,
      checkpointInline: false,
      rootMount: null,
    },
    module: 'apfs-clone.js',
    load: () => import('./apfs-clone.js').then((m) => m.apfsCloneBackend),
  },
  'git-worktree': {
    traits: {
      experimental: false,
      testOnly: false,
      cloneFamily: false,
      probeCacheable: false,
      hookRank: null,
      checkpointInline: false,
      rootMount: null,
    },
    module: 'git-worktree.js',
    load: () => import('./git-worktree.js').then((m) => m.gitWorktreeBackend),
  },
  agentfs: {
    traits: {
      experimental: true,
      testOnly: false,
      cloneFamily: false,
      probeCacheable: false,
      hookRank: null,
      checkpointInline: false,
      rootMount: 'fuse',
    },
    module: 'agentfs/agentfs.js',
    load: () => import('./agentfs/agentfs.js').then((m) => m.agentfsBackend),
  },
  'hardlink-farm': {
    traits: {
      experimental: false,
      testOnly: true,
      cloneFamily: false,
      probeCacheable: false,
      hookRank: null,
      checkpointInline: false,
      rootMount: null,
    },
    module: 'hardlink-farm.js',
    load: () => import('./hardlink-farm.js').then((m) => m.hardlinkFarmBackend),
  },
} as const satisfies Record<string, BackendRow>;

type Table = typeof BACKENDS;
/** Every built-in backend, test-only ones included. */
export type BuiltinBackendName = keyof Table;
/** A backend offered to users. */
export type BackendName = { [K in BuiltinBackendName]: Table[K]['traits']['testOnly'] extends true ? never : K }[BuiltinBackendName];
/** A backend that exists only for tests: a negative control the oracle must catch. */
export type TestBackendName = Exclude<BuiltinBackendName, BackendName>;
/** A built-in backend, a test-only one, or one a user loaded from a module (backends/module.ts). */
export type AnyBackendName = BuiltinBackendName | (string & {});

const ALL = Object.keys(BACKENDS) as BuiltinBackendName[];
/** The backends offered to users, in the table's order (`pdb-env backends` lists them so). */
export const BACKEND_NAMES = ALL.filter((n) => !BACKENDS[n].traits.testOnly) as readonly BackendName[];
/** The negative controls, never offered to users. */
export const TEST_BACKEND_NAMES = ALL.filter((n) => BACKENDS[n].traits.testOnly) as readonly TestBackendName[];

/** The row of a built-in backend; undefined for any other name (a module's, or none). */
export function backendRow(name: string): BackendRow | undefined {
  return Object.hasOwn(BACKENDS, name) ? BACKENDS[name as BuiltinBackendName] : undefined;
}

type Trait = { [K in keyof BackendTraits]: BackendTraits[K] extends boolean ? K : never }[keyof BackendTraits];

/** The built-in backends that have a trait, in the table's order. */
export function backendsWith(trait: Trait): BuiltinBackendName[] {
  return ALL.filter((n) => BACKENDS[n].traits[trait]);
}

/** The backends the Claude Code hook tries by itself, best first. */
export function hookOrder(): BackendName[] {
  const rank = (n: BackendName) => BACKENDS[n].traits.hookRank;
  return BACKEND_NAMES.filter((n) => rank(n) !== null).sort((a, b) => rank(a)! - rank(b)!);
}

/** The module files (under dist/) the checkpoint bundle inlines: those of the backends with `checkpointInline`. */
export function checkpointInlineModules(): string[] {
  return backendsWith('checkpointInline').map((n) => `backends/${BACKENDS[n].module}`);
}
