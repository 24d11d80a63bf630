// The session service of a store, loaded when a command runs. Apart from context.ts (which holds
// the commander side) so that the cheap path (cheap-path.ts) opens it without loading commander.
import type { SessionService } from '../sessions/service.js';

/** The session service of the store `--store` names (or the default one). */
export async function openService(store: string | undefined): Promise<SessionService> {
  const [{ SessionService }, { resolveStoreDir }] = await Promise.all([
    import('../sessions/service.js'),
    import('../sessions/records/store-location.js'),
  ]);
  return SessionService.open(resolveStoreDir({ store }));
}
