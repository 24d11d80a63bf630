// The workload contract, types only. A workload prepares a fixture (the base), runs steps in a
// session root, and declares what of the result is compared with the full-copy oracle. Workloads
// never reach into the scheduler or the store: the harness hands them roots and a process runner.
import type { Entry, MismatchCounts } from '../model/snapshot.js';

export interface ProcessOptions {
  cwd: string;
  /** Added to a clean copy of the harness's environment. */
  env?: Record<string, string | undefined>;
  /** The step's own timeout; when it fires the whole process group is killed and `timedOut` is true. */
  timeoutMs: number;
  input?: string;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** Child CPU and peak RSS from GNU time when it is installed; null otherwise (never guessed). */
  cpuUserMs: number | null;
  cpuSystemMs: number | null;
  peakRssBytes: number | null;
  stdout: string;
  stderr: string;
}

/** A server or watcher: runs in its own process group until `stop()`. */
export interface LongRunningProcess {
  readonly pid: number;
  /** All output so far (stdout and stderr interleaved). */
  output(): string;
  /** Whether the process has exited (on its own, or stopped). */
  hasExited(): boolean;
  /** Resolve when `predicate(output)` holds; reject with E_TIMEOUT after `timeoutMs` or if the process exits first. */
  waitForOutput(predicate: (output: string) => boolean, timeoutMs: number, what: string): Promise<void>;
  /** Kill the whole process group (TERM, then KILL) and wait for it. Safe to call twice. */
  stop(): Promise<ProcessResult>;
}

export interface ProcessRunner {
  run(command: string, args: string[], options: ProcessOptions): Promise<ProcessResult>;
  start(command: string, args: string[], options: Omit<ProcessOptions, 'timeoutMs' | 'input'>): LongRunningProcess;
}

export interface SessionHandle {
  name: string;
  root: string;
}

export interface StepContext {
  /** The session under test (sessions[0]) and any peers the workload asked for. */
  session: SessionHandle;
  sessions: SessionHandle[];
  /** A directory outside every session for this case's scratch files (event logs, caches). */
  scratchDir: string;
  /** A directory shared by all cases of one run (e.g. a pnpm store), outside every session. */
  sharedDir: string;
  params: Record<string, unknown>;
  proc: ProcessRunner;
  /** Run a command through `pdb-env run SESSION -- ...` (a separate process under the session's lease). */
  pdbEnvRun(session: SessionHandle, command: string, args: string[], options: Omit<ProcessOptions, 'cwd'>): Promise<ProcessResult>;
  /** Run `pdb-env ARGS` on the case's store (e.g. `ps NAME --json`, `stop NAME`): the user's own commands, as pdbEnvRun is. */
  pdbEnv(args: string[], options: Omit<ProcessOptions, 'cwd'>): Promise<ProcessResult>;
  /** Called to record a workload metric on the case (e.g. the pnpm import method). */
  metric(name: string, value: string | number | boolean): void;
  log(message: string): void;
  /** Aborted when the case times out: in-process steps stop between operations. */
  signal?: AbortSignal;
  /** The base Snapshot's entries (what every session started from). */
  baseEntries?: Entry[];
  /** Record a real agent's run on the case (receipts list them under `agents`: product, version, model "scripted"...). */
  recordAgent?(record: AgentRecord): void;
}

/** How a real agent's run failed, kept apart from filesystem mismatches (which the case's checks report). */
export type AgentFailureClass =
  'none' | 'agent-crash' | 'protocol-mismatch' | 'step-failure' | 'incomplete' | 'timeout' | 'not-installed' | 'harness';

/** One real agent run of a case, as the receipt records it (harness/receipt/receipt-types.ts re-exports it; schemas/receipt.schema.json mirrors it). */
export interface AgentRecord {
  /** The agent's session: a (the case session, judged by the oracle) or b (its peer). */
  role: string;
  /** The agent as pdb-env agent run names it (codex, claude, codex-acp, claude-acp). */
  agent: string;
  /** The product (codex-cli, claude-code, codex-acp, claude-agent-acp). */
  product: string;
  /** The exact version that ran (the pinned one). */
  version: string;
  /** How pdb-env reached it: a command through pdb-env run, or ACP with pdb-env as the client. */
  boundary: 'command' | 'acp';
  /** The model wire protocol it spoke (responses, messages, chat). */
  protocol: string;
  /** Always scripted: pdb-env's model server played a cassette; nothing here is evidence about a model. */
  model: 'scripted';
  /** The cassette's name in the workload. */
  cassette: string;
  /** sha256 of the cassette's canonical JSON. */
  cassetteDigest: string;
  /** Model turns the scripted server answered. */
  turns: number;
  /** Steps in the cassette. */
  steps: number;
  /** Steps done, their tool results checked. */
  stepsDone: number;
  /** loopback-only (a network namespace with only lo), or not-enforced (the agent shared the host network). */
  network: 'loopback-only' | 'not-enforced';
  /** Requests the workspace policy refused (E_POLICY_DENIED). */
  policyDenials: number;
  /** ok, or the failure's code (E_AGENT_CRASHED, E_MODEL_PROTOCOL, E_AGENT_STEP_FAILED, ...). */
  outcome: string;
  /** The failure's class: none, agent-crash, protocol-mismatch (the server could not map a request), step-failure, incomplete, timeout, not-installed, harness. */
  failureClass: AgentFailureClass;
  /** Wall time of the agent's run in milliseconds. */
  durationMs: number;
}

export interface StepOutcome {
  /** The step's main process, if it had one, for CPU/RSS/exit code in the receipt. */
  process?: ProcessResult;
  /** Extra milestone timings inside the step (e.g. tsserver `firstDiagnosticsMs`). */
  milestones?: Record<string, number>;
}

export interface Step {
  name: string;
  timeoutMs: number;
  /** Throw a PdbError (E_STEP_FAILED, E_TIMEOUT, ...) to fail the step; the case records code and step. */
  run(ctx: StepContext): Promise<StepOutcome | void>;
}

export interface Fixture {
  /** Short, path-free name recorded in receipts, version included (e.g. "npm-app@1+73eddfd2"). */
  name: string;
  /** The fixture's version; when absent, the part of the name after "@" (up to "-" or "+"). */
  version?: string;
  /** Directory to import as the base. */
  sourceDir: string;
}

export interface WorkloadCheck {
  name: string;
  passed: boolean;
  detail?: string;
  mismatches?: MismatchCounts;
}

/** A problem with a workload's parameters: a JSON pointer under the parameters ("/steps/0/run") and what is wrong. */
export interface ParamIssue {
  pointer: string;
  message: string;
}

/**
 * What the oracle compares, beyond what the Snapshot holds. The oracle reads every case's tree
 * from its bytes; a workload whose steps make trees the Snapshot excludes (an install, a build)
 * names them here so they are compared too, less the volatile paths it declares.
 */
export interface OracleScope {
  /** What the comparison covers, as the receipt and the report say it: source always; installed (node_modules), build (dist, .next). */
  scope: ('source' | 'installed' | 'build')[];
  /** Names among the source's excludes that the oracle reads anyway (e.g. node_modules, dist, .next). */
  include: string[];
  /**
   * Files a tool writes with the session's own absolute path inside (pnpm's .bin shims, Next.js's
   * required-server-files.json), as globs: compared with that path replaced by a placeholder, so the
   * rest of their bytes still count.
   */
  rootPathFiles?: string[];
}

export interface Workload {
  readonly name: string;
  readonly description: string;
  /** Deterministic workloads compare the full result; others declare a projection. */
  readonly deterministic: boolean;
  /** How many sessions a case needs (2 for two-agent: the case session and its peer). */
  readonly sessions: number;
  readonly defaultParams: Record<string, unknown>;
  /**
   * Every problem with the (effective) parameters, checked before any filesystem work by bench and
   * validate alike. Absent: each parameter must have the type of its default.
   */
  paramIssues?(params: Record<string, unknown>): ParamIssue[];
  /** Build or locate the fixture under `workDir` (outside any store), once per run. */
  prepareFixture(workDir: string, params: Record<string, unknown>, proc: ProcessRunner): Promise<Fixture>;
  steps(params: Record<string, unknown>): Step[];
  /**
   * The part of the session's result compared with the oracle, and why. Identity for
   * deterministic workloads; e.g. generated output reduced to existence for installs.
   */
  project(entries: Entry[], params: Record<string, unknown>): Entry[];
  readonly projectionNote: string;
  /**
   * Volatile paths (globs over relative paths, e.g. `node_modules/.vite/**`, `**\/*.tsbuildinfo`): caches
   * that differ between two correct runs. The harness drops them from every result before `project`
   * and records, per case, how many entries each pattern dropped.
   */
  volatilePaths?(params: Record<string, unknown>): string[];
  /** What the oracle compares (absent: the source files only). */
  oracleScope?(params: Record<string, unknown>): OracleScope;
  /**
   * Deterministic workloads may compute the oracle's expected result in advance from the base
   * entries (the case session's, sessions[0]). Without it, the full-copy case of the same block is
   * the oracle.
   */
  expected?(base: Entry[], params: Record<string, unknown>): Promise<Entry[]>;
  /** Workload-specific checks after the steps (e.g. peers saw only their own work). */
  check?(ctx: StepContext, results: Entry[][]): Promise<WorkloadCheck[]>;
  /**
   * What a failed case really is: "unavailable" when the lane cannot run on this host (an agent that
   * is not installed), "environment" when something outside pdb-env and the filesystem failed (an
   * agent's credentials or network, the registry) and nothing in the session was touched; "failed"
   * otherwise. Absent: the harness's own rules (registry failures are environment).
   */
  classifyFailure?(
    failure: { code: string; phase: string },
    metrics: Record<string, string | number | boolean>,
  ): 'unavailable' | 'environment' | 'failed';
}
