import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agent, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRootClient } from '../../agents/acp-client.js';
import { resolveInsideRoot } from '../../agents/confine.js';
import { parsePolicy, type WorkspacePolicy } from '../../model/workspace-policy.js';
import { isPdbError } from '../../model/errors.js';
import { tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

// A session-like layout: the root, and next to it a record the agent must never reach.
const sessionDir = join(t.dir, 'sessions', 's1');
const root = join(sessionDir, 'root');
writeTree(root, { 'in.txt': 'inside\n', sub: { 'deep.txt': 'deep\n' } });
writeFileSync(join(sessionDir, 'session.json'), 'the session record\n');
writeFileSync(join(t.dir, 'outside.txt'), 'outside\n');
symlinkSync('../session.json', join(root, 'escape-link'));
symlinkSync(join(t.dir, 'outside.txt'), join(root, 'abs-link'));
symlinkSync('../nowhere', join(root, 'dangling-link'));
mkdirSync(join(t.dir, 'outside-dir'));
symlinkSync(join(t.dir, 'outside-dir'), join(root, 'dir-link'));

async function refused(p: string): Promise<boolean> {
  try {
    await resolveInsideRoot(root, p);
    return false;
  } catch (err) {
    return isPdbError(err, 'E_PATH_OUTSIDE_ROOT');
  }
}

test('paths inside the root resolve; ".." , absolute paths and symlinks out are refused', async () => {
  assert.ok((await resolveInsideRoot(root, join(root, 'in.txt'))).endsWith('/root/in.txt'));
  assert.ok((await resolveInsideRoot(root, 'sub/deep.txt')).endsWith('/root/sub/deep.txt'));
  assert.ok(
    (await resolveInsideRoot(root, join(root, 'new/dir/file.txt'))).endsWith('/root/new/dir/file.txt'),
    'a path that does not exist yet, inside',
  );
  assert.ok(await refused(join(root, '..', 'session.json')), '.. to the session record');
  assert.ok(await refused(join(t.dir, 'outside.txt')), 'absolute path outside');
  assert.ok(await refused('/etc/passwd'));
  assert.ok(await refused(join(root, 'escape-link')), 'relative symlink out');
  assert.ok(await refused(join(root, 'abs-link')), 'absolute symlink out');
  assert.ok(await refused(join(root, 'dangling-link')), 'dangling symlink');
  assert.ok(await refused(join(root, 'dir-link', 'new.txt')), 'a new file under a symlinked dir that points out');
});

// An in-process agent that asks the client for things, connected straight to the client app.
async function withAgent<T>(
  op: (client: import('@agentclientprotocol/sdk').AgentContext, sessionId: string) => Promise<T>,
  policies?: WorkspacePolicy[],
): Promise<{ value: T; stats: ReturnType<typeof createRootClient>['stats'] }> {
  const rc = createRootClient(root, { policies });
  let out: { value: T } | null = null;
  const a = agent({ name: 'test-agent' })
    .onRequest('initialize', () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: {}, authMethods: [] }))
    .onRequest('session/new', () => ({ sessionId: 'x' }))
    .onRequest('session/prompt', async ({ params, client }) => {
      out = { value: await op(client, params.sessionId) };
      return { stopReason: 'end_turn' };
    });
  await rc.app.connectWith(a, async (ctx) => {
    await ctx.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    });
    const s = await ctx.buildSession(root).start();
    await s.prompt('go');
    s.dispose();
  });
  await rc.closeTerminals();
  return { value: out!.value, stats: rc.stats };
}

async function errorOf(p: Promise<unknown>): Promise<RequestError | null> {
  try {
    await p;
    return null;
  } catch (err) {
    return err instanceof RequestError ? err : new RequestError(0, String(err));
  }
}

test('the client serves fs reads and writes inside the root and refuses them outside, with an error', async () => {
  const { value, stats } = await withAgent(async (c, sessionId) => ({
    inside: (await c.request('fs/read_text_file', { sessionId, path: join(root, 'in.txt') })).content,
    readOut: await errorOf(c.request('fs/read_text_file', { sessionId, path: join(root, '..', 'session.json') })),
    readLink: await errorOf(c.request('fs/read_text_file', { sessionId, path: join(root, 'escape-link') })),
    writeOut: await errorOf(c.request('fs/write_text_file', { sessionId, path: join(t.dir, 'written-outside.txt'), content: 'x' })),
    writeViaLink: await errorOf(c.request('fs/write_text_file', { sessionId, path: join(root, 'dir-link', 'via-link.txt'), content: 'x' })),
    writeIn: await errorOf(c.request('fs/write_text_file', { sessionId, path: join(root, 'made', 'nested', 'new.txt'), content: 'new\n' })),
  }));
  assert.is(value.inside, 'inside\n');
  for (const k of ['readOut', 'readLink', 'writeOut', 'writeViaLink'] as const) {
    assert.ok(value[k], `${k} must be refused`);
    assert.match(value[k]!.message, /E_PATH_OUTSIDE_ROOT/, k);
  }
  assert.is(value.writeIn, null);
  assert.is(readFileSync(join(root, 'made', 'nested', 'new.txt'), 'utf8'), 'new\n');
  assert.not.ok(existsSync(join(t.dir, 'written-outside.txt')), 'nothing was written outside');
  assert.not.ok(existsSync(join(t.dir, 'outside-dir', 'via-link.txt')), 'nothing was written through the symlink');
  assert.is(stats.refusedOutsideRoot, 4);
  assert.is(stats.fsReads, 1);
  assert.is(stats.fsWrites, 1);
});

test('terminals run in the root (or a directory inside it); a cwd outside is refused', async () => {
  const { value } = await withAgent(async (c, sessionId) => {
    const term = await c.createTerminal({ sessionId, command: 'pwd' });
    const exit = await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    const sub = await c.createTerminal({ sessionId, command: 'ls', args: ['.'], cwd: join(root, 'sub') });
    await sub.waitForExit();
    const subOut = await sub.currentOutput();
    await sub.release();
    const outside = await errorOf(c.createTerminal({ sessionId, command: 'pwd', cwd: t.dir }));
    const limited = await c.createTerminal({ sessionId, command: 'printf 0123456789', outputByteLimit: 4 });
    await limited.waitForExit();
    const tail = await limited.currentOutput();
    await limited.release();
    return { exit, out: out.output, subOut: subOut.output, outside, tail };
  });
  assert.is(value.tail.output, '6789', 'output beyond the limit is dropped from the start');
  assert.is(value.tail.truncated, true);
  assert.is(value.exit.exitCode, 0);
  assert.ok(value.out.trim().endsWith('/root'), value.out);
  assert.is(value.subOut.trim(), 'deep.txt');
  assert.ok(value.outside);
  assert.match(value.outside!.message, /E_PATH_OUTSIDE_ROOT/);
});

test('the workspace policy: denied reads, writes and terminal cwds get an ACP error, and nothing is written', async () => {
  writeFileSync(join(root, '.env'), 'SECRET=1\n');
  mkdirSync(join(root, 'node_modules', 'x'), { recursive: true });
  const { value } = await withAgent(async (c, sessionId) => ({
    env: await errorOf(c.request('fs/read_text_file', { sessionId, path: join(root, '.env') })),
    nm: await errorOf(c.request('fs/write_text_file', { sessionId, path: join(root, 'node_modules', 'x', 'index.js'), content: 'x' })),
    dist: await errorOf(c.request('fs/write_text_file', { sessionId, path: 'dist/out.js', content: 'x' })),
    nmRead: await errorOf(c.request('fs/read_text_file', { sessionId, path: join(root, 'in.txt') })),
    cwd: await errorOf(c.createTerminal({ sessionId, command: 'pwd', cwd: join(root, '.hidden-dir') })),
  }));
  for (const k of ['env', 'nm', 'dist', 'cwd'] as const) {
    assert.ok(value[k], `${k} must be refused`);
    assert.match(value[k]!.message, /E_POLICY_DENIED/, k);
  }
  assert.match(value.env!.message, /default:credential \.env/);
  assert.match(value.nm!.message, /default:never-writable node_modules/);
  assert.is(value.nmRead, null);
  assert.not.ok(existsSync(join(root, 'node_modules', 'x', 'index.js')));
  assert.not.ok(existsSync(join(root, 'dist')));
  const opened = await withAgent(
    async (c, sessionId) => (await c.request('fs/read_text_file', { sessionId, path: '.env' })).content,
    [parsePolicy({ allowSensitive: ['.env'] }, 'pdb-env.json')],
  );
  assert.is(opened.value, 'SECRET=1\n', 'a policy that allows it');
});

test.run();
