// A small generated repository for the repo workload's tests: a source file, a watcher that reports
// what it sees, an HTTP server that serves the file on $PORT, a committed history (when git is here),
// and what people have beside their commits: an untracked .env and an ignored node_modules cache.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Plan } from '../../harness/plan/plan.js';
import type { RepoStep } from '../../workloads/repo/params.js';

const WATCHER = `import { readFileSync, watch } from 'node:fs';
// Reports every change under lib/ with the file's content, the way a test watcher reruns.
watch('lib', () => console.log('saw: ' + readFileSync('lib/a.js', 'utf8').trim()));
console.log('watching lib');
`;

const SERVER = `import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
// Serves lib/a.js as it is now, the way a dev server serves a module.
createServer((req, res) => {
  if (req.url === '/a') res.end(readFileSync('lib/a.js'));
  else if (req.url === '/health') res.end('ok');
  else { res.statusCode = 404; res.end(); }
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
`;

/** Write the repository under `dir`; commit it when `git` is true. Returns `dir`. */
export function makeRepo(dir: string, options: { git: boolean }): string {
  mkdirSync(join(dir, 'lib'), { recursive: true });
  writeFileSync(join(dir, 'lib', 'a.js'), 'export const a = 1;\n');
  writeFileSync(join(dir, 'watch.mjs'), WATCHER);
  writeFileSync(join(dir, 'serve.mjs'), SERVER);
  writeFileSync(join(dir, '.gitignore'), 'node_modules\ndist\n');
  if (options.git) {
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir };
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: dir, env, stdio: 'ignore' });
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'fixture');
  }
  // Beside the commits: an untracked .env and an ignored cache (git-worktree carries neither).
  writeFileSync(join(dir, '.env'), 'TOKEN=local-only\n');
  mkdirSync(join(dir, 'node_modules', '.cache'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', '.cache', 'seen'), 'cache\n');
  return dir;
}

/** A plan of the repo workload over `backends`, the source given as ${SOURCE}. */
export function repoPlan(name: string, steps: RepoStep[], over: Partial<Plan> = {}, params: Record<string, unknown> = {}): Plan {
  return {
    kind: 'pdb-env-plan',
    name,
    backends: ['full-copy'],
    workloads: [{ name: 'repo', params: { source: '${SOURCE}', steps: steps as never, ...(params as object) } }],
    blocks: 1,
    warmupBlocks: 0,
    seed: 7,
    caseTimeoutMs: 120_000,
    ...over,
  };
}
