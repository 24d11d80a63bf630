// The files a run of the built CLI loaded: every ES module Node's loader resolved (a module hook
// appends each URL to a file) and every CommonJS file require() loaded (the require cache at exit).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { CLI } from './index.js';

export interface ModulesLoaded {
  urls: string[];
  required: string[];
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `node ENTRY args` (ENTRY: the CLI's, unless given) with `env`, logging into a file under `logDir`. */
export function modulesLoaded(logDir: string, args: string[], env: Record<string, string> = {}, entry = CLI): ModulesLoaded {
  const log = join(logDir, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(log, '');
  const hooks = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
  const preload = `import { register, createRequire } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}); const r = createRequire(process.cwd() + '/'); process.on('exit', () => process.stderr.write('REQUIRED=' + JSON.stringify(Object.keys(r.cache)) + '\\n'));`;
  const run = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(preload)}`, entry, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const m = /REQUIRED=(.*)/.exec(run.stderr);
  assert.ok(m, `the hook reported nothing: ${run.stderr}`);
  return {
    urls: readFileSync(log, 'utf8').split('\n').filter(Boolean),
    required: JSON.parse(m[1]!) as string[],
    code: run.status,
    stdout: run.stdout,
    stderr: run.stderr.replace(/REQUIRED=.*\n/, ''),
  };
}
