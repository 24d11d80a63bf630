// The command table (cli/command-table.cts): one row per command, read by commander and by the
// cheap path. Every option commander knows comes from the table's declarations (no command module
// declares one of its own), and a plain call of a cheap command parses by util.parseArgs
// configured from the same declarations; anything else goes to commander.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  COMMANDS,
  GLOBAL_OPTIONS,
  cheapCall,
  commandRow,
  optionKey,
  type CommandName,
  type OptionDecls,
} from '../../cli/command-table.cjs';
import { commandStub, rootCommand, type CliContext } from '../../cli/context.js';
import { createProgram } from '../../cli/program.js';

const call = (argv: string[]) => {
  const c = cheapCall(argv);
  return c && { name: c.name, operands: c.operands, options: c.options };
};

test('plain checkpoint and restore calls take the cheap path; anything else goes to commander', () => {
  const plain: Array<[string[], ReturnType<typeof call>]> = [
    [['checkpoint', 'a'], { name: 'checkpoint', operands: ['a'], options: {} }],
    [['checkpoint'], { name: 'checkpoint', operands: [], options: {} }],
    [['checkpoint', '--json', 'a', '--verify'], { name: 'checkpoint', operands: ['a'], options: { json: true, verify: true } }],
    [['checkpoint', 'a', '--store', '/s'], { name: 'checkpoint', operands: ['a'], options: { store: '/s' } }],
    [['checkpoint', '--store=/s', 'a'], { name: 'checkpoint', operands: ['a'], options: { store: '/s' } }],
    [['restore', 'a', '--to', '3'], { name: 'restore', operands: ['a'], options: { to: '3' } }],
    [['restore', '--to=base', '--json'], { name: 'restore', operands: [], options: { to: 'base', json: true } }],
  ];
  for (const [argv, want] of plain) assert.equal(call(argv), want, argv.join(' '));
  const others = [
    [],
    ['list'],
    ['diff', 'a'],
    ['--store', '/s', 'checkpoint', 'a'],
    ['checkpoint', 'a', 'b'],
    ['checkpoint', '--help'],
    ['checkpoint', '-h'],
    ['checkpoint', 'a', '--json', '--json'],
    ['checkpoint', 'a', '--json=1'],
    ['checkpoint', 'a', '--store'],
    ['checkpoint', 'a', '--store', '--json'],
    ['checkpoint', 'a', '--store='],
    ['checkpoint', 'a', '--store', ''],
    ['checkpoint', 'a', '--store', '/s', '--store', '/t'],
    ['checkpoint', 'a', '--verfy'],
    ['checkpoint', '--', 'a'],
    ['checkpoint', ''],
    ['checkpoint', '-'],
    ['restore', 'a'],
    ['restore', 'a', 'b', '--to', '1'],
    ['restore', 'a', '--to'],
    ['restore', 'a', '--to', '1', '--to', '2'],
    ['constructor'],
  ];
  for (const argv of others) assert.is(cheapCall(argv), null, argv.join(' '));
});

/** Every command (and subcommand) as commander defines it, with the options it declares itself (the global ones left out). */
async function definedOptions(): Promise<Map<string, string[]>> {
  const ctx: CliContext = { argv: [], exitCode: 0 };
  createProgram(ctx);
  const root = rootCommand('0');
  const out = new Map<string, string[]>();
  for (const name of Object.keys(COMMANDS) as CommandName[]) {
    const cmd = commandStub(root, name, commandRow(name)!.summary);
    await ctx.define!(cmd, name);
    out.set(
      name,
      cmd.options.map((o) => o.flags),
    );
    for (const sub of cmd.commands)
      out.set(
        `${name} ${sub.name()}`,
        sub.options.map((o) => o.flags),
      );
  }
  return out;
}

test("commander's options are the table's declarations: no command module declares one", async () => {
  const flags = (decls: object | undefined) =>
    Object.entries(decls ?? {}).map(([long, d]) => (d.type === 'boolean' ? `--${long}` : `--${long} <${d.value}>`));
  const want = new Map<string, string[]>();
  for (const [name, row] of Object.entries(COMMANDS)) {
    want.set(name, flags('options' in row ? row.options : undefined));
    for (const [sub, r] of Object.entries('subcommands' in row ? row.subcommands : {}))
      want.set(`${name} ${sub}`, flags('options' in r ? r.options : undefined));
  }
  const got = await definedOptions();
  assert.equal([...got.keys()].sort(), [...want.keys()].sort(), 'the commands and subcommands commander defines');
  for (const [name, f] of want) assert.equal(got.get(name), f, name);
  assert.ok([...got.values()].flat().length > 50, 'the table declares the options of every command');
  // The global ones, declared once too.
  assert.equal(
    rootCommand('0')
      .options.filter((o) => o.long !== '--version')
      .map((o) => o.flags),
    flags(GLOBAL_OPTIONS),
  );
});

test("the cheap path reads the same declarations: a repeatable option stays a list, keys are commander's", () => {
  assert.is(optionKey('dry-run'), 'dryRun');
  assert.is(optionKey('allow-stale-build'), 'allowStaleBuild');
  const cheap = Object.entries(COMMANDS).filter(([, row]) => 'cheap' in row);
  assert.equal(
    cheap.map(([name]) => name),
    ['checkpoint', 'restore'],
  );
  // Every option checkpoint declares is taken by a plain call.
  const own = Object.entries(COMMANDS.checkpoint.options as OptionDecls).flatMap(([long, d]) =>
    d.type === 'string' ? [`--${long}`, 'value'] : [`--${long}`],
  );
  assert.equal(Object.keys(cheapCall(['checkpoint', 'a', ...own])!.options), Object.keys(COMMANDS.checkpoint.options).map(optionKey));
});

test.run();
