#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { PdbError } from '../model/errors.js';
import { parseCommandArgs, type Command } from './command.js';
import { SESSION_COMMANDS, listCommand } from './commands/sessions.js';
import { reportCommand } from './commands/report.js';
import { benchCommand } from './commands/bench.js';
import { validateCommand } from './commands/validate.js';
import { emitError } from './output.js';

const COMMANDS: Command[] = [...SESSION_COMMANDS, benchCommand, validateCommand, reportCommand];

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `pdb-env ${version()}: private workspaces for coding agents from one pinned base

Usage: pdb-env <command> [options]     (bare pdb-env lists sessions)

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Every command takes --help, --json and --store DIR.
Guarantee: workspace isolation for trusted agents (securityIsolation: false).`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const json = argv.includes('--json');
  if (name === undefined) return listCommand.run({ values: {}, positionals: [], rest: [], json: false });
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  try {
    if (!cmd) throw new PdbError('E_USAGE', `unknown command "${name}"`, { hint: 'pdb-env --help lists the commands.' });
    const args = parseCommandArgs(cmd, rest);
    if (args.help) {
      process.stdout.write(`${cmd.help}\n`);
      return 0;
    }
    return await cmd.run(args);
  } catch (err) {
    return emitError(json, err);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.exitCode = emitError(false, err);
  },
);
