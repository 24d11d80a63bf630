// The backend a session was made by: a built-in one by name, or a user's own, loaded again from
// the module its record names (a later process, such as discard or gc, has not loaded it yet).
import { loadBackend } from '../../backends/load.js';
import type { Backend } from '../../backends/types.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import type { SessionRecord } from '../records/session-record.js';

export async function sessionBackend(rec: Pick<SessionRecord, 'name' | 'backend' | 'backendModule'>): Promise<Backend> {
  if (rec.backendModule) {
    try {
      const { loadBackendModule } = await import('../../backends/module.js');
      const m = await loadBackendModule(rec.backendModule);
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
