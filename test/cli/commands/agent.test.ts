// pdb-env agent install and model serve through the real CLI, and agent run where nothing is
// installed. The real agents' runs are in agent-run.test.ts.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readEventLog } from '../../../agents/model-server/events.js';
import { CLI, cli, realAgentsMissing, skipTest, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const cassette = join(t.dir, 'c.json');
writeFileSync(cassette, JSON.stringify({ kind: 'pdb-env-cassette', version: 1, steps: [{ action: 'mkdir', path: 'd' }], final: 'done' }));

test('every new command has --help', () => {
  for (const [args, re] of [
    [['agent', 'install', '--help'], /pinned exact version[\s\S]*PDB_ENV_AGENTS_DIR[\s\S]*@openai\/codex 0\.171\.0/],
    [['agent', 'run', '--help'], /--agent <agent>[\s\S]*--cassette <file>[\s\S]*loopback-only[\s\S]*E_MODEL_PROTOCOL/],
    [['model', 'serve', '--help'], /--cassette <file>[\s\S]*--port <n>[\s\S]*--log <file>[\s\S]*first line on stdout/],
    [['agent', '--help'], /install[\s\S]*run/],
  ] as const) {
    const r = cli([...args]);
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, re);
  }
});

test('agent run without the agent installed is E_AGENT_NOT_INSTALLED naming the install command, before any work', () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'a\n' });
  const env = { PDB_ENV_STORE: join(t.dir, 'store'), PDB_ENV_AGENTS_DIR: join(t.dir, 'no-agents') };
  assert.is(cli(['create', 'x', '--from', src], { env }).code, 0);
  const r = cli(['agent', 'run', 'x', '--agent', 'codex', '--cassette', cassette, '--json'], { env });
  assert.is(r.code, 1);
  const e = JSON.parse(r.stdout).error;
  assert.is(e.code, 'E_AGENT_NOT_INSTALLED');
  assert.is(e.hint, 'pdb-env agent install codex');
  const diff = cli(['diff', 'x', '--json'], { env });
  assert.equal(JSON.parse(diff.stdout).changes, []);
  // Bad options fail first, with the choices.
  const bad = cli(['agent', 'run', 'x', '--agent', 'gpt', '--cassette', cassette, '--json'], { env });
  assert.match(JSON.parse(bad.stdout).error.message, /--agent must be one of codex, claude, codex-acp, claude-acp, opencode/);
  const badCassette = join(t.dir, 'bad.json');
  writeFileSync(badCassette, '{"kind":"pdb-env-cassette","version":1,"steps":[{"action":"write","path":"../x","content":""}],"final":"f"}');
  const br = cli(['agent', 'run', 'x', '--agent', 'claude', '--cassette', badCassette, '--json'], { env });
  assert.is(JSON.parse(br.stdout).error.code, 'E_CASSETTE_INVALID');
  assert.is(cli(['discard', 'x'], { env }).code, 0);
});

test('agent install refuses unknown agents; with the pinned agents present it changes nothing', () => {
  const bad = cli(['agent', 'install', 'gpt-9', '--json']);
  assert.is(JSON.parse(bad.stdout).error.code, 'E_USAGE');
  const missing = realAgentsMissing();
  if (missing) return skipTest('agent install with the agents present', 'real-agents', missing);
  const t0 = Date.now();
  const r = cli(['agent', 'install', '--json']);
  assert.is(r.code, 0, r.stderr);
  const rows = JSON.parse(r.stdout) as { agent: string; product: string; version: string; program: string; action: string }[];
  assert.equal(
    rows.map((x) => [x.agent, x.product, x.version, x.action]),
    [
      ['codex', 'codex-cli', '0.171.0', 'present'],
      ['claude', 'claude-code', '2.1.197', 'present'],
      ['codex-acp', 'codex-acp', '0.16.0', 'present'],
      ['claude-acp', 'claude-agent-acp', '0.49.0', 'present'],
    ],
  );
  assert.ok(rows.every((x) => x.program.endsWith(`/node_modules/.bin/${x.program.split('/').pop()}`)));
  assert.ok(Date.now() - t0 < 20_000, 'no reinstall');
});

test('model serve prints its base URL first, serves, logs each request, and ends on TERM', async () => {
  const log = join(t.dir, 'model.log');
  const child = spawn(process.execPath, [CLI, 'model', 'serve', '--cassette', cassette, '--port', '0', '--log', log], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) res(out.split('\n')[0]!);
    });
    child.once('close', (code) => rej(new Error(`exited ${code}`)));
  });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.is((await fetch(url, { method: 'HEAD' })).status, 200);
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'go' }],
      tools: [
        { type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
      ],
    }),
  });
  assert.match(JSON.parse(await r.text()).choices[0].message.tool_calls[0].function.arguments, /mkdir -p -- 'd'/);
  const closed = new Promise<number | null>((res) => child.once('close', (code) => res(code)));
  child.kill('SIGTERM');
  assert.is(await closed, 0);
  const events = readEventLog(log);
  assert.equal(
    events.map((e) => e.event),
    ['listening', 'request', 'request', 'closed'],
  );
  assert.is(events[2]!.answer, 'call');
  assert.match(readFileSync(log, 'utf8'), /"tools":"shell=bash"/);
  const busy = cli(['model', 'serve', '--cassette', cassette, '--port', '99999']);
  assert.is(busy.code, 2);
});

test.run();
