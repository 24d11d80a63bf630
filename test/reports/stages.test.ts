// reports/ reads as a pipeline: receipts -> analysis -> gate -> document -> render, one folder per
// stage, and a stage imports only from its own folder and the stages before it (type-only and
// dynamic imports included), so the folders read in order and no walk through them turns back.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT } from '../helpers/index.js';

/** The stages in order; reports/README.md names them in the same order. */
const STAGES = ['receipts', 'analysis', 'gate', 'document', 'render'] as const;
const REPORTS = join(REPO_ROOT, 'reports');

/** The stage folders' imports within reports/ that point at a later stage: `from -> to`. */
function backwardImports(files: Map<string, string>): string[] {
  const bad: string[] = [];
  for (const [file, text] of files) {
    const from = STAGES.indexOf(file.split('/')[0] as (typeof STAGES)[number]);
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = relative(REPORTS, resolve(REPORTS, dirname(file), fileName))
        .split(sep)
        .join('/');
      if (to.startsWith('..')) continue; // outside reports/: the architecture test judges it
      if (STAGES.indexOf(to.split('/')[0] as (typeof STAGES)[number]) > from) bad.push(`reports/${file} -> reports/${to}`);
    }
  }
  return bad;
}

test('reports/ holds only its stage folders (and generated reports), each stage importing only earlier ones', () => {
  const sourceDirs = readdirSync(REPORTS).filter(
    (n) => statSync(join(REPORTS, n)).isDirectory() && readdirSync(join(REPORTS, n)).some((f) => f.endsWith('.ts')),
  );
  assert.equal(sourceDirs.sort(), [...STAGES].sort(), 'a folder of reports/ with sources that is not a stage');
  assert.equal(
    readdirSync(REPORTS).filter((n) => n.endsWith('.ts')),
    [],
    'a source file at the top of reports/: put it in its stage',
  );
  const files = new Map<string, string>();
  for (const stage of STAGES)
    for (const name of readdirSync(join(REPORTS, stage)).filter((n) => n.endsWith('.ts')))
      files.set(`${stage}/${name}`, readFileSync(join(REPORTS, stage, name), 'utf8'));
  assert.ok(files.size >= 15, `found only ${files.size} files`);
  assert.equal(backwardImports(files), [], 'imports that run back up the pipeline');
});

test('the stage check sees an import of a later stage, type-only and dynamic ones too', () => {
  const files = new Map([
    ['analysis/a.ts', "import type { GateResult } from '../gate/gate-policy.js';"],
    ['gate/g.ts', "import { x } from '../analysis/a.js';\nconst r = await import('../render/render.js');"],
    ['document/d.ts', "import { y } from './svg.js';\nimport { z } from '../../model/errors.js';"],
  ]);
  assert.equal(backwardImports(files), [
    'reports/analysis/a.ts -> reports/gate/gate-policy.js',
    'reports/gate/g.ts -> reports/render/render.js',
  ]);
});

test.run();
