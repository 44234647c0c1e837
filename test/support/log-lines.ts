/** pino's numeric levels: trace, debug, info, warn, error, fatal. */
const PINO_LEVELS = new Set([10, 20, 30, 40, 50, 60]);

/**
 * The lines of `lines` that are not one line of pino as config/logger.ts makes it: a JSON object
 * with a numeric `level` of pino's, `time` in milliseconds since the epoch, the writer's `pid`, its
 * `hostname` and the logger's `name`. Each is returned as it was written.
 */
export function notPinoLines(lines: readonly string[]): string[] {
  return lines.filter((line) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return true;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return true;
    const { level, time, pid, hostname, name } = parsed as Record<string, unknown>;
    return !(
      PINO_LEVELS.has(level as number) &&
      Number.isInteger(time) &&
      (time as number) > Date.parse('2020-01-01') &&
      Number.isInteger(pid) &&
      typeof hostname === 'string' &&
      typeof name === 'string'
    );
  });
}
