import type { ChildProcess } from 'node:child_process';
import { startChildService, type ChildService } from '../child-service';

/** What a stack needs of a worker or API process it started: its name, its process, a way to stop it. */
export interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** One `node <script>` process of the service, as the stack asks for it. */
export interface ServiceSpec {
  name: string;
  /** The entry point's absolute path (`dist/worker/main.js`, `dist/api/main.js`, …). */
  script: string;
  nodeArgs: readonly string[];
  env: NodeJS.ProcessEnv;
  /** The stdout line that says the process is ready. */
  readyPattern: RegExp;
}

/** Starts a process and resolves once it is ready (a stack can bring its own: the bench logs to files). */
export type StartService<P extends ServiceProcess> = (spec: ServiceSpec) => Promise<P>;

/** A ChildService with the line that said it was ready (the worker's carries its deployment version). */
export type StackProcess = ChildService & { readonly readyLine: string };

/**
 * The default way to start one: a child service whose output is echoed with a `[name]` prefix
 * (`echo`) or dropped. One that is not ready in time is stopped, not left behind.
 */
export function childServiceStarter(echo: boolean, onLine?: (name: string, line: string) => void): StartService<StackProcess> {
  return async (spec) => {
    const service = startChildService(spec.name, process.execPath, [...spec.nodeArgs, spec.script], {
      readyPattern: spec.readyPattern,
      env: spec.env,
      echo,
      ...(onLine ? { onLine: (line: string) => onLine(spec.name, line) } : {}),
    });
    try {
      const match = await service.ready;
      return Object.assign(service, { readyLine: match.input });
    } catch (err) {
      await service.stop(1000);
      throw err;
    }
  };
}

/** SIGKILL: no shutdown hooks run, as when a machine dies. Resolves once it has exited. */
export async function killProcess(service: ServiceProcess | undefined): Promise<void> {
  if (!service || service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGKILL');
  await exited;
}
