// The backend a session was made by: a built-in one by name, or a user's own, loaded again from
// the module its record names (a later process, such as discard or gc, has not loaded it yet), and
// only when its bytes are the ones recorded: a record names a module, it never chooses what code runs.
import { loadBackend } from '../../backends/load.js';
import type { Backend } from '../../backends/types.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import type { SessionRecord } from '../records/session-record.js';

export async function sessionBackend(
  rec: Pick<SessionRecord, 'name' | 'backend' | 'backendModule' | 'backendModuleDigest'>,
): Promise<Backend> {
  if (rec.backendModule) {
    // A record without the module's digest was not written by create (or predates it): nothing says which bytes to trust.
    if (!rec.backendModuleDigest)
      throw new PdbError(
        'E_BACKEND_MODULE_CHANGED',
        `session ${rec.name}'s record names the backend module ${rec.backendModule} but not its sha256; it was not loaded`,
        {
          hint: `If ${rec.backendModule} is the module that made ${rec.name}, add "backendModuleDigest": "sha256:<its sha256>" to its session.json; otherwise restore the record.`,
        },
      );
    try {
      const { loadBackendModule } = await import('../../backends/module.js');
      const m = await loadBackendModule(rec.backendModule, { digest: rec.backendModuleDigest });
      if (m.backend.name !== rec.backend)
        throw new PdbError(
          'E_BACKEND_MODULE_INVALID',
          `session ${rec.name}'s backend module now names its backend "${m.backend.name}", not "${rec.backend}"`,
        );
    } catch (err) {
      if (!isPdbError(err, 'E_BACKEND_MODULE_INVALID')) throw err;
      throw new PdbError(
        'E_BACKEND_MODULE_INVALID',
        `session ${rec.name} was made by the backend module ${rec.backendModule}: ${err.message}`,
        {
          hint: 'Put the module back where it was (its release undoes what it made), then run the command again.',
          cause: err,
        },
      );
    }
  }
  return loadBackend(rec.backend, { allowTestOnly: true });
}
