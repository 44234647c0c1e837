import { readFileSync } from 'node:fs';
import path from 'node:path';

// `node dist/bench/profile-summary.js FILE.cpuprofile [N]`: where a process spent its CPU, from a
// V8 profile written by `npm run bench -- --profile` (node --cpu-prof). Prints the top N
// functions by self time and the self time per package (node_modules/<pkg>, node internals, ours).

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function bucketOf(url: string): string {
  if (!url) return '(native / idle / gc)';
  if (url.startsWith('node:')) return 'node internals';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  return (
    'ours: ' +
    path
      .relative(process.cwd(), url.replace(/^file:\/\//, ''))
      .split(path.sep)
      .slice(0, 2)
      .join('/')
  );
}

function summarise(file: string, top: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const fns = new Map<string, number>();
  const buckets = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = `${functionName || '(anonymous)'} ${url ? `${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : ''}`.trim();
    fns.set(name, (fns.get(name) ?? 0) + us);
    const bucket = bucketOf(url);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const list = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${pct(us)}  ${k}`);
  return [
    `${file}: ${(total / 1e6).toFixed(1)} s sampled`,
    'by package:',
    ...list(buckets, 15),
    `top ${top} functions (self time):`,
    ...list(fns, top),
  ].join('\n');
}

const [file, n] = process.argv.slice(2);
if (!file) {
  console.error('usage: node dist/bench/profile-summary.js FILE.cpuprofile [N]');
  process.exit(2);
}
console.log(summarise(file, Number(n ?? 25)));
