import assert from 'node:assert/strict';
import { CURVE_CLIENTS, CURVE_SIDES, CURVE_SIZES, type CurvePoint } from '../../bench/cases/curve';
import { renderCurveSvg, renderCurveTable } from '../../bench/curve-plot';

describe('bench: the curve of case 3 (plot and table)', () => {
  const points: CurvePoint[] = CURVE_SIZES.flatMap((size) =>
    CURVE_CLIENTS.flatMap((clients) =>
      CURVE_SIDES.map((side, s) => ({
        side,
        size,
        clients,
        changesPerSec: size * clients * (s + 1) * 3,
        p50Ms: 10 * (s + 1) + size / 10,
        p99Ms: 20 * (s + 1) + size / 10,
        errors: 0,
      })),
    ),
  );

  it('when the points are plotted, then the SVG has one line per side and size in each panel, and a legend naming the sides', () => {
    const svg = renderCurveSvg(points, 'caption <&>');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(svg.trim(), /<\/svg>$/);
    assert.equal((svg.match(/<polyline /g) ?? []).length, 2 * CURVE_SIDES.length * CURVE_SIZES.length);
    for (const line of svg.match(/<polyline points="([^"]+)"/g) ?? []) {
      const coords = line.replace(/.*points="|"$/g, '').split(' ');
      assert.equal(coords.length, CURVE_CLIENTS.length, line);
      for (const c of coords)
        assert.ok(
          c.split(',').every((n) => Number.isFinite(Number(n))),
          c,
        );
    }
    assert.ok(svg.includes('empty workflow (floor)') && svg.includes('caption &lt;&amp;>'));
  });

  it('when the points are tabulated, then there is one row per size and client count, with API/empty p50', () => {
    const rows = renderCurveTable(points).split('\n').slice(2);
    assert.equal(rows.length, CURVE_SIZES.length * CURVE_CLIENTS.length);
    assert.match(rows[0], /^\| 1 \| 1 \| 3 \| 10\.1 \/ 20\.1 \| 6 \| 20\.1 \/ 40\.1 \| 9 \| 30\.1 \/ 60\.1 \| 0\.34 \|$/);
  });
});
