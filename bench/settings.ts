import { envSettingsOf } from '../config/read-settings';
import { type SettingsTable } from '../config/setting-row';

/** The bench's own settings: one row each, parsed like the service's (config/settings.ts). */
export const BENCH_SETTINGS = {
  FLOOR_TASK_QUEUE: {
    kind: 'string',
    readBy: 'bench',
    description: "set by bench/stack.ts for its floor worker: the empty workflow's task queue",
  },
  FLOOR_CACHED_WORKFLOWS: {
    kind: 'integer',
    min: 1,
    readBy: 'bench',
    description: "set by bench/stack.ts for its floor worker: its sticky cache's size (as the service's worker's WORKER_CACHED_WORKFLOWS)",
  },
} as const satisfies SettingsTable;

/** This process's bench settings, parsed once. */
export const benchSettings = () => envSettingsOf(BENCH_SETTINGS);
