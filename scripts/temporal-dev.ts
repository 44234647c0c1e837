import { temporalBinary } from './lib/temporal-binary';
import { readDevServerSettings, startDevServer } from './lib/temporal-dev-server';

/** `npm run temporal`: only the embedded Temporal dev server of temporal-dev.yaml, in the foreground. */
async function main() {
  const settings = readDevServerSettings();
  const dev = await startDevServer(temporalBinary(), settings, { stdio: 'inherit' });
  console.log(`Temporal dev server ready at ${dev.address}${dev.uiUrl ? `, UI ${dev.uiUrl}` : ''}`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void dev.stop().then(() => process.exit(0)));
  dev.child.once('exit', (code) => process.exit(code ?? 1));
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
