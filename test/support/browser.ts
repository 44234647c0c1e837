import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { CHROMIUM_FLAGS } from '../../scripts/lib/chromium-flags';

/** Debian's chromium, which `npm test`'s pretest installs (scripts/chromium.sh). */
export const CHROMIUM = '/usr/bin/chromium';

/** A headless Chromium with a fresh profile, driven by playwright-core; `close` removes the profile. `javaScriptEnabled: false`: pages run no script. */
export async function launchChromium(
  options: { javaScriptEnabled?: boolean } = {},
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(path.join(tmpdir(), 'chromium-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_FLAGS],
    ...options,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
