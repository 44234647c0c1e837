import { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../config/config';
import { temporalConnectionOptions } from '../../config/temporal-connection';

/** Runs `use` with a client of the configured Temporal namespace (the dev server's default address when none is set), then closes the connection. */
export async function withTemporalClient<T>(use: (client: Client, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const connection = await Connection.connect(temporalConnectionOptions(config, config.temporal.address ?? '127.0.0.1:7233'));
  try {
    return await use(new Client({ connection, namespace: config.temporal.namespace }), config);
  } finally {
    await connection.close();
  }
}
