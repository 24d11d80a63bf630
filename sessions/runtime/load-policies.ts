// The workspace policy of a session: the "policy" of pdb-env.json in its root (else the default),
// narrowed by a --policy FILE when one is given. Both are checked against the schema. How a path
// is judged (links inside the root resolved first) is the agent boundary's: agents/confine.ts.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { SOURCE_CONFIG } from '../../model/scan/scan.js';
import { defaultPolicy, parsePolicy, type WorkspacePolicy } from '../../model/workspace-policy.js';

async function readJson(file: string, what: string): Promise<unknown | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return undefined;
    throw toPdbError(err, 'E_IO', { action: `reading ${what}`, path: file });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PdbError('E_POLICY_INVALID', `${what} is not valid JSON: ${(err as Error).message}`, { path: file, cause: err });
  }
}

/** The policies that apply in `root`: its pdb-env.json's (or the default), then `policyFile`'s (composition narrows). */
export async function loadPolicies(root: string, policyFile?: string): Promise<WorkspacePolicy[]> {
  const config = (await readJson(join(root, SOURCE_CONFIG), SOURCE_CONFIG)) as { policy?: unknown } | undefined;
  const out = [config?.policy === undefined ? defaultPolicy() : parsePolicy(config.policy, SOURCE_CONFIG)];
  if (policyFile !== undefined) {
    const doc = await readJson(policyFile, policyFile);
    if (doc === undefined) throw new PdbError('E_USAGE', `--policy ${policyFile}: no such file`);
    out.push(parsePolicy(doc, policyFile));
  }
  return out;
}
