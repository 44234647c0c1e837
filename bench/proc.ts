import { readFileSync, writeFileSync } from 'node:fs';

// What the bench reads of its child processes from /proc: memory (case 4) and CPU time.

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux, whatever CONFIG_HZ is). */
const USER_HZ = 100;

/** CPU time (user + system, ms) a process has used so far; 0 when it cannot be read. */
export function cpuMs(pid: number): number {
  try {
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of stat.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return 0;
  }
}

// Peak resident memory of the bench's child processes, from /proc/<pid>/status: VmRSS now,
// VmHWM the peak since the process started or since its counter was last reset (writing "5" to
// /proc/<pid>/clear_refs, Linux >= 4.0). Resetting it at the start of a case makes VmHWM the
// peak *of that case*; where the reset is refused, a 100 ms VmRSS sampler stands in.

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined; // the process is gone, or this is not Linux
  }
}

function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Tracks the peak RSS (MB) of some processes between start() and stop(). */
export class PeakRss {
  private readonly peakKb = new Map<number, number>();
  private readonly resetOk = new Map<number, boolean>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly pids: readonly number[]) {}

  start(): this {
    for (const pid of this.pids) {
      this.resetOk.set(pid, resetPeak(pid));
      this.peakKb.set(pid, statusKb(pid, 'VmRSS') ?? 0);
    }
    this.timer = setInterval(() => this.sample(), 100);
    this.timer.unref();
    return this;
  }

  private sample(): void {
    for (const pid of this.pids) this.peakKb.set(pid, Math.max(this.peakKb.get(pid) ?? 0, statusKb(pid, 'VmRSS') ?? 0));
  }

  /** Peak RSS in MB per pid over the tracked span. */
  stop(): Map<number, number> {
    clearInterval(this.timer);
    this.sample();
    const out = new Map<number, number>();
    for (const pid of this.pids) {
      const hwm = this.resetOk.get(pid) ? (statusKb(pid, 'VmHWM') ?? 0) : 0;
      out.set(pid, Math.round(Math.max(hwm, this.peakKb.get(pid) ?? 0) / 1024));
    }
    return out;
  }
}
