// pdb-env's public API (`import { SessionService } from 'pdb-env'`): the workspace service, the
// backend registry, the evidence harness, reports and schema validation, with the one error type.
// This package's scripts import from here too; nothing outside should reach into dist/ paths.

// The workspace service.
export { SessionService, SESSION_NAME_PATTERN, assertSessionName, assertEnvName } from './sessions/service.js';
export type {
  CheckpointResult,
  CreateOptions,
  CreateResult,
  DamagedSession,
  Finding as DoctorFinding,
  GcResult,
  ImportResult,
  ObjectProblem,
  SessionInfo,
  SessionRecord,
  SessionState,
  VerifyResult,
} from './sessions/service.js';
export { resolveStoreDir } from './sessions/records/store-location.js';

// Backends, and what a module implementing your own needs (docs/your-backend.md).
export { BACKEND_NAMES, type AnyBackendName, type BackendName } from './backends/table.js';
export type { Backend, BackendContext, BackendHooks, BackendState, Capabilities, CreatedSession, ProbeResult } from './backends/types.js';
export { getBackend, isBackendName, listBackends, probeBackend, type BackendReport } from './backends/registry.js';
export { contractProblems, loadBackendModule, type ModuleBackend } from './backends/module.js';
export type { ObjectStore } from './model/store/object-store.js';

// The model's documents.
export type { Change, Changeset, Entry, Snapshot } from './model/snapshot.js';
export type { Digest } from './model/canonical-json.js';

// The evidence harness: plans in, receipts out.
export { runBench, type BenchOptions, type BenchResult } from './harness/bench.js';
export { checkPlan, loadPlan, planDigest, type Plan, type PlanWorkload } from './harness/plan/plan.js';
export type {
  AnyReceipt,
  CaseOutcome,
  CaseRecord,
  CheckRecord,
  FixtureRecord,
  PhaseRecord,
  Provenance,
  Receipt,
  ReceiptSummary,
  ReceiptV1,
} from './harness/receipt/receipt-types.js';

// Schema validation: every schema the package ships, by name.
export {
  SCHEMA_NAMES,
  detectSchema,
  formatIssues,
  hasSchema,
  validateAgainst,
  type SchemaIssue,
  type SchemaName,
} from './model/schemas.js';

// Reports: pure functions from receipts (and a policy) to numbers, a verdict and documents.
export { analyzeReceipts, type AnalyzeOptions } from './reports/analysis/analyze.js';
export type { ReportData } from './reports/analysis/report-data.js';
export { evaluateGate } from './reports/gate/gate.js';
export type { Finding as GateFinding, GateResult, Policy, Verdict } from './reports/gate/gate-policy.js';
export { validatePolicy } from './reports/gate/gate-policy.js';
export { renderHtml, renderJson, renderMarkdown, type RenderedMarkdown, type ReportJson } from './reports/render/render.js';

// Errors: one class, stable codes.
export { ERROR_CODES, PdbError, isPdbError, type PdbErrorCode } from './model/errors.js';
