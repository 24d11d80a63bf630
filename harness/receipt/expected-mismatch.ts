// The one rule for an "expected mismatch", read by the bench's Markdown summary, the proof's
// closing lines and the report's answer: a case of a backend whose capabilities say it does not
// carry the full Snapshot (git-worktree carries committed files only, so never an untracked file
// or an empty directory) that ended as a mismatch. It shows what that backend drops; the backend is
// still not correct here, and a mismatch of any other backend, or a failure of this one, is not expected.
import type { CaseRecord, Receipt } from './receipt-types.js';

/** The backends of the receipt declared not to carry the full Snapshot (their mismatches are expected). */
export function partialBackends(receipt: Pick<Receipt, 'backends'>): Set<string> {
  return new Set(receipt.backends.filter((b) => b.capabilities && !b.capabilities.carriesFullSnapshot).map((b) => b.name));
}

/** Is this case a mismatch the receipt's own capabilities lead one to expect? */
export function isExpectedMismatch(partial: ReadonlySet<string>, c: Pick<CaseRecord, 'backend' | 'outcome'>): boolean {
  return c.outcome === 'mismatch' && partial.has(c.backend);
}

/** Why a backend of `partial` mismatches, in words. */
export const EXPECTED_MISMATCH_WHY = 'it does not carry the whole tree (committed files only)';
