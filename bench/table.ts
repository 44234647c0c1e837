import type { BenchResults, PhaseResult } from './results';
import { ratio, round } from './stats';
import { renderCurveTable } from './curve-plot';

// Renders BenchResults as Markdown tables: readable in a terminal and pasted as-is into docs/performance.md.

function table(header: string[], rows: Array<Array<string | number>>): string {
  const lines = [header, header.map(() => '---'), ...rows.map((r) => r.map(String))];
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

const errs = (n: number) => (n > 0 ? ` (${n} errors)` : '');
/** Milliseconds at a precision the noise of this machine justifies. */
const ms = (x: number) => (x >= 100 ? String(Math.round(x)) : x.toFixed(1));

function submitRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    p.submit.map(({ concurrency, api, direct, floor, apiCpuMsPerRequest }) => [
      p.workers,
      concurrency,
      `${api.opsPerSec}${errs(api.errors)}`,
      `${direct.opsPerSec}${errs(direct.errors)}`,
      floor ? `${floor.opsPerSec}${errs(floor.errors)}` : '-',
      floor ? `**${ratio(api.opsPerSec, floor.opsPerSec)}**` : '-',
      `${ms(api.p50Ms)} / ${ms(api.p99Ms)}`,
      `${ms(direct.p50Ms)} / ${ms(direct.p99Ms)}`,
      floor ? `${ms(floor.p50Ms)} / ${ms(floor.p99Ms)}` : '-',
      floor ? `**${ratio(api.p99Ms, floor.p99Ms)}**` : '-',
      apiCpuMsPerRequest,
    ]),
  );
}

/** The floor, then the floor doing the parts of a status change, then the execution itself (direct). */
function statusChangeRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    p.submit.flatMap(({ concurrency, direct, floor, floorParts }) =>
      floor && floorParts
        ? [
            [
              p.workers,
              concurrency,
              ...[floor, floorParts.searchAttribute, floorParts.activity, floorParts.close, direct].map((x) =>
                x ? `${x.opsPerSec}${errs(x.errors)} (${ms(x.p50Ms)} / ${ms(x.p99Ms)})` : '-',
              ),
              floorParts.close ? ratio(direct.opsPerSec, floorParts.close.opsPerSec) : '-',
            ],
          ]
        : [],
    ),
  );
}

/**
 * The targets of a status change, against the floor that upserts the same search attribute (the
 * least a status change can cost while operators list executions by it): direct ≥ 0.9 of it,
 * through the API ≥ 0.8 of it; beside them the API against the empty floor.
 */
function targetRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    p.submit.flatMap(({ concurrency, api, direct, floor, floorParts }) =>
      floor && floorParts
        ? [
            [
              p.workers,
              concurrency,
              `${floorParts.searchAttribute.opsPerSec} (${ms(floorParts.searchAttribute.p50Ms)} / ${ms(floorParts.searchAttribute.p99Ms)})`,
              `${direct.opsPerSec} (${ms(direct.p50Ms)} / ${ms(direct.p99Ms)})`,
              `**${ratio(direct.opsPerSec, floorParts.searchAttribute.opsPerSec)}**`,
              `${api.opsPerSec} (${ms(api.p50Ms)} / ${ms(api.p99Ms)})`,
              `**${ratio(api.opsPerSec, floorParts.searchAttribute.opsPerSec)}**`,
              ratio(api.opsPerSec, floor.opsPerSec),
            ],
          ]
        : [],
    ),
  );
}

/** CPU ms per Update by process, for the two floors that bracket a SIGNING change and the execution itself. */
function cpuRows(phases: PhaseResult[]) {
  const sides = [
    ['floorSearchAttribute', 'floor + search attribute'],
    ['floorClose', 'floor + search attribute + close'],
    ['direct', 'execution, direct'],
    ['api', 'execution through the API'],
  ] as const;
  return phases.flatMap((p) =>
    p.submit.flatMap(({ concurrency, cpu }) =>
      cpu
        ? sides.map(([key, name]) => {
            const c = cpu[key];
            // The API's CPU counts only where the Updates went through it (elsewhere it is the idle API's).
            const api = key === 'api' ? c.apiMs : undefined;
            return [p.workers, concurrency, name, c.serverMs, c.workerMs, api ?? '-', round(c.serverMs + c.workerMs + (api ?? 0), 1)];
          })
        : [],
    ),
  );
}

function costLine(phases: PhaseResult[]): string {
  const c = phases[0]?.executionCost;
  if (!c) return '';
  const actions = c.actions === undefined ? 'Temporal Cloud billable actions not counted' : `${c.actions} Temporal Cloud billable actions`;
  return `In this run, one execution from prepare through deposit to SIGNING cost the server ${c.events} history events (${actions}): ${c.workflowTasks} workflow tasks, ${c.activityTasks} activity tasks, ${c.markers} local-activity markers (the floor's Update: one workflow task).`;
}

function whitelistRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    (p.whitelist ?? []).map(({ size, api, direct, empty, apiCpuMsPerBatch }) => {
      const p50 = ratio(api.p50Ms, direct.p50Ms);
      return [
        p.workers,
        size,
        `${ms(api.p50Ms)} / ${ms(api.p99Ms)}${errs(api.errors)}`,
        `${ms(direct.p50Ms)} / ${ms(direct.p99Ms)}${errs(direct.errors)}`,
        p50,
        ratio(api.p99Ms, direct.p99Ms),
        `${ms(empty.p50Ms)} / ${ms(empty.p99Ms)}${errs(empty.errors)}`,
        ratio(empty.p50Ms, direct.p50Ms),
        ratio(api.p50Ms, empty.p50Ms),
        ratio(api.p99Ms, empty.p99Ms),
        apiCpuMsPerBatch,
      ];
    }),
  );
}

/** Whether the run measured batches with one copy of each entry beside the default (older results did not). */
const hasOneCopy = (phases: PhaseResult[]) => phases.some((p) => p.whitelist?.some((w) => w.apiOneCopy));

/**
 * The one-local-activity floor against the empty one: the least a batch that re-checks its token
 * first can cost; with a one-copy side, both APIs' p50 and their ratio to that floor.
 */
function leastBatchRows(phases: PhaseResult[]) {
  const oneCopy = hasOneCopy(phases);
  return phases.flatMap((p) =>
    (p.whitelist ?? []).flatMap(({ size, api, empty, oneLocalActivity: one, apiOneCopy }) =>
      one
        ? [
            [
              p.workers,
              size,
              `${ms(empty.p50Ms)} / ${ms(empty.p99Ms)}${errs(empty.errors)}`,
              `${ms(one.p50Ms)} / ${ms(one.p99Ms)}${errs(one.errors)}`,
              ratio(one.p50Ms, empty.p50Ms),
              ...(oneCopy
                ? [
                    `${ms(api.p50Ms)}: ${ratio(api.p50Ms, one.p50Ms)}`,
                    apiOneCopy ? `${ms(apiOneCopy.p50Ms)}: ${ratio(apiOneCopy.p50Ms, one.p50Ms)}${errs(apiOneCopy.errors)}` : '',
                  ]
                : [ratio(api.p50Ms, one.p50Ms)]),
            ],
          ]
        : [],
    ),
  );
}

function timelineRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    (p.whitelist ?? []).map(({ size, timeline: t, emptyTimeline: e }) => [
      p.workers,
      size,
      ms(t.httpMs),
      ms(t.apiMs),
      ms(t.serverMs),
      ms(t.workflowTaskMs),
      ms(t.activityMs),
      t.workflowTasks,
      e ? `${ms(e.httpMs)} / ${ms(e.apiMs)} / ${ms(e.serverMs)} / ${ms(e.workflowTaskMs)}` : '',
    ]),
  );
}

function memoryRows(phases: PhaseResult[]) {
  return phases.flatMap((p) =>
    (['submit', 'whitelist'] as const).flatMap((c) => {
      const m = p.memory[c];
      if (!m) return [];
      return [[p.workers, c === 'submit' ? '1 (submit)' : '3 + 5 (whitelist)', m.apiMb, m.workerMb]];
    }),
  );
}

function scaleRows(phases: PhaseResult[]) {
  const [one, two] = [phases.find((p) => p.workers === 1), phases.find((p) => p.workers === 2)];
  if (!one || !two) return [];
  const rows: Array<Array<string | number>> = one.submit.flatMap((s1) => {
    const s2 = two.submit.find((s) => s.concurrency === s1.concurrency)!;
    return (['api', 'direct'] as const).map((side) => [
      `submit ${side === 'api' ? 'through the API' : 'direct'}, ${s1.concurrency} clients, req/s`,
      s1[side].opsPerSec,
      s2[side].opsPerSec,
      ratio(s2[side].opsPerSec, s1[side].opsPerSec),
    ]);
  });
  const t1 = one.whitelistThroughput;
  const t2 = two.whitelistThroughput;
  if (!t1 || !t2) return rows;
  rows.push([
    `whitelist through the API, batches of ${t1.size}, ${t1.concurrency} clients, batches/s`,
    t1.api.opsPerSec,
    t2.api.opsPerSec,
    ratio(t2.api.opsPerSec, t1.api.opsPerSec),
  ]);
  return rows;
}

export function renderTables(r: BenchResults): string {
  const v = r.verify;
  const statusRows = statusChangeRows(r.phases);
  return [
    `intent-service bench on ${r.settings.temporal === 'cluster' ? 'the Temporal server v1.29.1 on PostgreSQL (npm run cluster topology)' : 'the Temporal dev server (SQLite)'}, ${r.date}: ${r.machine.cpus} vCPU (${r.machine.cpuModel}), ${r.machine.memoryGb} GB, Node ${r.machine.node}; ${r.durationS} s; ` +
      `load average ${r.machine.loadAverage.start} → ${r.machine.loadAverage.end}` +
      (Object.keys(r.settings.serverConfig).length > 0 ? `; dev server config ${JSON.stringify(r.settings.serverConfig)}` : ''),
    '',
    `Case 1: submit (OPERATION_PENDING → SIGNING), ${r.settings.submitsPerSide} per side: through the API over HTTP; the same Update sent directly with @temporalio/client; and the floor: the same Update to a workflow that only answers it, on its own worker process`,
    '',
    table(
      [
        'workers',
        'clients',
        'API req/s',
        'direct req/s',
        'floor req/s',
        'API/floor req/s',
        'API p50 / p99 ms',
        'direct p50 / p99 ms',
        'floor p50 / p99 ms',
        'API/floor p99',
        'API CPU ms / request',
      ],
      submitRows(r.phases),
    ),
    '',
    costLine(r.phases),
    '',
    ...(statusRows.length > 0
      ? [
          'Case 1, a status change against its floor: Updates/s (p50 / p99 ms) to the floor that upserts the ExecutionState search attribute, to the execution directly and through the API; the targets are direct/floor ≥ 0.9 and API/floor ≥ 0.8; the last column is the API against the empty floor',
          '',
          table(
            ['workers', 'clients', 'floor + search attribute', 'direct', 'direct / floor', 'API', 'API / floor', 'API / empty floor'],
            targetRows(r.phases),
          ),
          '',
          'Case 1, where a status change goes: Updates/s (p50 / p99 ms) to the floor, to the floor that also upserts the ExecutionState search attribute, to that floor also running one activity, to that floor closing in the task that answers (as an execution does at SIGNING), and to the execution (direct); the last column: execution / the floor that upserts and closes',
          '',
          table(
            [
              'workers',
              'clients',
              'floor',
              '+ search attribute',
              '+ search attribute + activity',
              '+ search attribute + close',
              'execution (direct)',
              'execution / upsert and close',
            ],
            statusRows,
          ),
          ...(cpuRows(r.phases).length > 0
            ? [
                '',
                `Case 1, CPU ms per Update by process (the machine's two cores are the ceiling, so these decide the rates above): the Temporal server${r.settings.temporal === 'cluster' ? ' (without PostgreSQL)' : ' (its SQLite included)'}, the worker that ran the workflows (the service's, or the floor's), the API`,
                '',
                table(['workers', 'clients', 'Updates to', 'server', 'worker', 'API', 'total'], cpuRows(r.phases)),
              ]
            : []),
        ]
      : []),
    '',
    'Case 2: ed25519 verify, same inputs, ops/s (one core)',
    '',
    table(
      ['shipped verifyEd25519', 'bare crypto.verify', 'tweetnacl', 'shipped / bare', 'shipped / tweetnacl'],
      [
        [
          v.shippedOpsPerSec,
          v.bareCryptoOpsPerSec,
          v.tweetnaclOpsPerSec,
          ratio(v.shippedOpsPerSec, v.bareCryptoOpsPerSec),
          ratio(v.shippedOpsPerSec, v.tweetnaclOpsPerSec),
        ],
      ],
    ),
    '',
    ...(r.phases.some((p) => p.whitelist)
      ? [
          `Case 3: whitelist batch over ${3} storage nodes, ${r.settings.batchesPerSide} per side, one at a time: API vs direct parallel fan-out, and the floor: a workflow that does nothing, started by update-with-start (empty)`,
          '',
          table(
            [
              'workers',
              'changes',
              'API p50 / p99 ms',
              'direct p50 / p99 ms',
              'API/direct p50',
              'API/direct p99',
              'empty workflow p50 / p99 ms',
              'empty workflow/direct p50',
              'API/empty workflow p50',
              'API/empty workflow p99',
              'API CPU ms / batch',
            ],
            whitelistRows(r.phases),
          ),
          '',
          ...(r.phases.some((p) => p.whitelist?.some((w) => w.oneLocalActivity))
            ? [
                'The least a batch can be: the empty workflow whose Update waits for one local activity that does nothing (a batch re-checks its token in one before any node is asked), by update-with-start, in the same rotation',
                '',
                table(
                  [
                    'workers',
                    'changes',
                    'empty workflow p50 / p99 ms',
                    'one local activity p50 / p99 ms',
                    'one local activity/empty p50',
                    ...(hasOneCopy(r.phases)
                      ? ['API (3 copies) p50 ms: /one local activity', 'API (1 copy) p50 ms: /one local activity']
                      : ['API/one local activity p50']),
                  ],
                  leastBatchRows(r.phases),
                ),
                '',
              ]
            : []),
          "Where an API batch's time goes (mean ms over the last 10 batches of each size, from their Temporal histories), and the same for the empty workflows of the same rows",
          '',
          table(
            [
              'workers',
              'changes',
              'HTTP total',
              'API + HTTP (outside the workflow)',
              'Temporal server (queues, persistence)',
              'workflow tasks',
              'activities only',
              'workflow tasks per batch',
              'empty workflow: total / outside the workflow / server / workflow task',
            ],
            timelineRows(r.phases),
          ),
          '',
          'Case 4: peak RSS (MB) during the case; worker: the largest worker process',
          '',
          table(['workers', 'case', 'API', 'worker'], memoryRows(r.phases)),
          '',
          'Case 5: scale, 2 worker processes vs 1',
          '',
          table(['measure', '1 worker', '2 workers', '2 / 1'], scaleRows(r.phases)),
          ...(r.curve
            ? [
                '',
                `Case 3 as a curve (--curve): ${r.curve.batchesPerPoint} batches per side and point, ${r.curve.workers} worker(s), closed-loop clients`,
                '',
                renderCurveTable(r.curve.points),
              ]
            : []),
        ]
      : []),
  ].join('\n');
}
