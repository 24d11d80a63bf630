// Each command module, imported when one of its commands runs: the table (command-table.cts)
// names each command's module, program.ts and the cheap path load it from here. Not in the table,
// because a command module reads its options' types from the table: the table importing the
// modules back would make a circle.
import type { CommandModule } from './command-table.cjs';
import type { CommandModuleExports } from './context.js';

export const COMMAND_MODULES = {
  sessions: () => import('./commands/sessions.js'),
  checkpoint: () => import('./commands/checkpoint.js'),
  history: () => import('./commands/history.js'),
  'way-back': () => import('./commands/way-back.js'),
  runtime: () => import('./commands/runtime.js'),
  'check-path': () => import('./commands/check-path.js'),
  store: () => import('./commands/store.js'),
  du: () => import('./commands/du.js'),
  bench: () => import('./commands/bench.js'),
  validate: () => import('./commands/validate.js'),
  report: () => import('./commands/report.js'),
  agent: () => import('./commands/agent.js'),
  model: () => import('./commands/model.js'),
  hook: () => import('./commands/hook.js'),
  daemon: () => import('./commands/daemon.js'),
  completion: () => import('./commands/completion.js'),
} satisfies Record<CommandModule, () => Promise<CommandModuleExports>>;
