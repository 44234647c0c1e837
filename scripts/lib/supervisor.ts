import path from 'node:path';
import { projectRoot } from '../../config/config';
import { startChildService, startChildrenInOwnProcessGroups, type ChildService } from './child-service';

/**
 * The processes of `npm start` and `npm run cluster`, kept as one: each part is stopped in the
 * reverse order of its start on Ctrl-C, SIGTERM or SIGHUP (exit 0), and when any part exits on its
 * own everything is stopped and the exit code is 1. Lines are prefixed with the launcher's tag.
 */
export class Supervisor {
  private readonly parts: Array<{ name: string; stop: () => Promise<void> }> = [];
  private stopping = false;

  constructor(private readonly tag: string) {
    // The parts do not see the terminal's Ctrl-C: this process alone decides the order they stop in.
    startChildrenInOwnProcessGroups();
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void this.stopAll(0));
  }

  say(line: string): void {
    process.stdout.write(`[${this.tag}] ${line}\n`);
  }

  /** Stops every part, newest first, then exits with `code`. */
  async stopAll(code: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const part of [...this.parts].reverse()) {
      this.say(`stopping ${part.name}`);
      await part.stop().catch(() => undefined);
    }
    this.say('all stopped');
    process.exit(code);
  }

  /** A part: stopped with `stop` (in reverse order); its exit, if given, before that stops everything. */
  add(name: string, stop: () => Promise<void>, exited?: Promise<unknown>): void {
    this.parts.push({ name, stop });
    if (exited) this.watch(name, exited);
  }

  /** A process whose exit stops everything, stopped as part of a group added on its own. */
  watch(name: string, exited: Promise<unknown>): void {
    void exited.then((code) => {
      if (this.stopping) return;
      process.stderr.write(`[${this.tag}] ${name} exited unexpectedly (${String(code)}); stopping everything\n`);
      void this.stopAll(1);
    });
  }

  /** Starts `node dist/<script>` as a part, ready when a stdout line matches `readyPattern`. */
  startScript(
    name: string,
    script: string,
    readyPattern: RegExp,
    options: { nodeArgs?: readonly string[]; env: NodeJS.ProcessEnv },
  ): ChildService {
    const service = startChildService(name, process.execPath, [...(options.nodeArgs ?? []), path.join(projectRoot, 'dist', script)], {
      readyPattern,
      env: options.env,
    });
    this.add(name, () => service.stop(15_000), service.exited);
    return service;
  }

  /** Says why the start failed and stops what had started (exit 1). */
  async failed(err: unknown): Promise<void> {
    process.stderr.write(`[${this.tag}] failed: ${(err as Error).message}\n`);
    await this.stopAll(1);
  }
}
