import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/project-root';
import { HOLD_REASONS } from '../../domain/refund-states';

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
const runbooks = () => read('docs/runbooks.md');

describe('docs/runbooks.md: held to the code', () => {
  it('when "A refund is held" lists the hold reasons, then it has one row per reason the code has, in its order', () => {
    const table = runbooks().split('<!-- hold-reasons:start -->')[1]?.split('<!-- hold-reasons:end -->')[0];
    assert.ok(table, 'no hold-reasons table');
    const listed = [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(listed, [...HOLD_REASONS]);
  });

  it('when a runbook gives an npm run command, then package.json has that script and its source knows each --flag', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const problems: string[] = [];
    for (const m of runbooks().matchAll(/npm run --silent ([a-z:-]+)(?: -- ([^`\n]*))?/g)) {
      const [, name, args = ''] = m;
      const script = scripts[name];
      if (!script) {
        problems.push(`no script ${name}`);
        continue;
      }
      const entry = /node (?:dist\/)?(scripts\/[a-z-]+)\.js/.exec(script);
      if (!entry) continue;
      const source = read(`${entry[1]}.ts`);
      const subcommand = /^([a-z]+)\b/.exec(args)?.[1];
      if (subcommand && !new RegExp(`--\\s+${subcommand}\\b|'${subcommand}'`).test(source))
        problems.push(`${name} has no subcommand ${subcommand}`);
      for (const flag of args.matchAll(/--([a-z][a-z-]*)/g))
        if (!source.includes(`--${flag[1]}`) && !source.includes(`'${flag[1]}'`)) problems.push(`${name} has no --${flag[1]}`);
    }
    assert.deepEqual(problems, []);
  });
});
