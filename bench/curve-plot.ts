import type { CurvePoint } from './cases/curve';

// The curve of case 3 as an SVG line chart (no dependency: a few dozen elements), and as a table.
// Left panel: changes/s against concurrent clients; right panel: p50 latency. Log scales on both
// axes, one colour per side (API, direct, empty workflow), one dash pattern per batch size.

const COLORS: Record<CurvePoint['side'], string> = { api: '#1f77b4', direct: '#2ca02c', empty: '#d62728' };
const LABELS: Record<CurvePoint['side'], string> = { api: 'API', direct: 'direct to the nodes', empty: 'empty workflow (floor)' };
const DASHES = ['', '6 3', '2 3'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Powers of ten (and 2×, 5×) spanning [lo, hi], for log-axis ticks. */
function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e;
      if (t >= lo && t <= hi) ticks.push(t);
    }
  return ticks;
}

function panel(points: CurvePoint[], value: (p: CurvePoint) => number, title: string, x0: number, width: number, height: number): string {
  const left = x0 + 56;
  const right = x0 + width - 12;
  const top = 28;
  const bottom = height - 40;
  const clients = [...new Set(points.map((p) => p.clients))].sort((a, b) => a - b);
  const values = points.map(value).filter((v) => v > 0);
  const lo = Math.min(...values) / 1.3;
  const hi = Math.max(...values) * 1.3;
  const xOf = (c: number) =>
    clients.length === 1
      ? (left + right) / 2
      : left + ((right - left) * Math.log2(c / clients[0])) / Math.log2(clients[clients.length - 1] / clients[0]);
  const yOf = (v: number) => bottom - ((bottom - top) * Math.log10(v / lo)) / Math.log10(hi / lo);
  const out: string[] = [`<text x="${(left + right) / 2}" y="16" text-anchor="middle" font-weight="bold">${esc(title)}</text>`];
  out.push(`<rect x="${left}" y="${top}" width="${right - left}" height="${bottom - top}" fill="none" stroke="#999"/>`);
  for (const t of logTicks(lo, hi)) {
    const y = yOf(t).toFixed(1);
    out.push(`<line x1="${left}" x2="${right}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${left - 4}" y="${y}" text-anchor="end" dominant-baseline="middle">${t}</text>`);
  }
  for (const c of clients) {
    const x = xOf(c).toFixed(1);
    out.push(`<text x="${x}" y="${bottom + 16}" text-anchor="middle">${c}</text>`);
  }
  out.push(`<text x="${(left + right) / 2}" y="${bottom + 32}" text-anchor="middle">concurrent clients</text>`);
  const sizes = [...new Set(points.map((p) => p.size))].sort((a, b) => a - b);
  for (const side of Object.keys(COLORS) as CurvePoint['side'][]) {
    sizes.forEach((size, i) => {
      const line = points
        .filter((p) => p.side === side && p.size === size && value(p) > 0)
        .sort((a, b) => a.clients - b.clients)
        .map((p) => `${xOf(p.clients).toFixed(1)},${yOf(value(p)).toFixed(1)}`);
      if (line.length === 0) return;
      const dash = DASHES[i % DASHES.length] ? ` stroke-dasharray="${DASHES[i % DASHES.length]}"` : '';
      out.push(`<polyline points="${line.join(' ')}" fill="none" stroke="${COLORS[side]}" stroke-width="2"${dash}/>`);
    });
  }
  return out.join('\n');
}

/** The SVG document: throughput and p50 latency against concurrency, with a legend. */
export function renderCurveSvg(points: CurvePoint[], caption: string): string {
  const width = 960;
  const height = 380;
  const sizes = [...new Set(points.map((p) => p.size))].sort((a, b) => a - b);
  const legend: string[] = [];
  let x = 60;
  for (const side of Object.keys(COLORS) as CurvePoint['side'][]) {
    legend.push(`<line x1="${x}" x2="${x + 24}" y1="${height - 8}" y2="${height - 8}" stroke="${COLORS[side]}" stroke-width="3"/>`);
    legend.push(`<text x="${x + 30}" y="${height - 4}">${esc(LABELS[side])}</text>`);
    x += 175;
  }
  legend.push(`<text x="${x}" y="${height - 4}">changes per batch:</text>`);
  x += 110;
  sizes.forEach((size, i) => {
    const dash = DASHES[i % DASHES.length] ? ` stroke-dasharray="${DASHES[i % DASHES.length]}"` : '';
    legend.push(`<line x1="${x}" x2="${x + 24}" y1="${height - 8}" y2="${height - 8}" stroke="#333" stroke-width="2"${dash}/>`);
    legend.push(`<text x="${x + 30}" y="${height - 4}">${size}</text>`);
    x += 60;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height + 40}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(points, (p) => p.changesPerSec, 'changes applied per second', 0, width / 2, height - 20),
    panel(points, (p) => p.p50Ms, 'p50 latency of a batch, ms', width / 2, width / 2, height - 20),
    ...legend,
    `<text x="8" y="${height + 30}">${esc(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}

/** The curve as a Markdown table: one row per size and concurrency, a column pair per side. */
export function renderCurveTable(points: CurvePoint[]): string {
  const rows = [
    '| changes | clients | API changes/s | API p50 / p99 ms | direct changes/s | direct p50 / p99 ms | empty workflow batches/s × size | empty p50 / p99 ms | API/empty p50 |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const keys = [...new Set(points.map((p) => `${p.size}:${p.clients}`))];
  for (const key of keys) {
    const [size, clients] = key.split(':').map(Number);
    const at = (side: CurvePoint['side']) => points.find((p) => p.side === side && p.size === size && p.clients === clients);
    const cell = (p?: CurvePoint) =>
      p ? [`${p.changesPerSec}${p.errors ? ` (${p.errors} errors)` : ''}`, `${p.p50Ms} / ${p.p99Ms}`] : ['', ''];
    const api = at('api');
    const empty = at('empty');
    rows.push(
      `| ${size} | ${clients} | ${[...cell(api), ...cell(at('direct')), ...cell(empty)].join(' | ')} | ${
        api && empty ? Math.round((api.p50Ms / empty.p50Ms) * 100) / 100 : ''
      } |`,
    );
  }
  return rows.join('\n');
}
