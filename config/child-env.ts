/**
 * The environment of a child process this one starts: `defaults`, then what this process inherited,
 * then `overrides` (an undefined override removes the variable). Children read their settings
 * from it like any process (config/read-settings.ts).
 */
export function childEnv(overrides: Record<string, string | undefined> = {}, defaults: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...defaults, ...process.env, ...overrides };
  for (const [k, v] of Object.entries(overrides)) if (v === undefined) delete env[k];
  return env;
}
