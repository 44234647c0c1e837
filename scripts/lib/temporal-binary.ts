import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../config/config';

/**
 * Path of the pinned `temporal` CLI: `$TEMPORAL_CLI`, else the per-user cache, building it there
 * once with `go install` (scripts/temporal-cli.sh prints its progress on stderr).
 */
export function temporalBinary(): string {
  const script = path.join(projectRoot, 'scripts', 'temporal-cli.sh');
  return execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}
