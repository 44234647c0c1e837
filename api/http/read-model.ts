import { unavailable } from '../../domain/errors';

/** Seconds a client should wait when the read model did not answer. */
export const READ_MODEL_RETRY_AFTER_S = 5;

/** A read-model call whose failure is a 503 naming `what`: the same request may be sent again once it is back. */
export async function fromReadModel<R>(what: string, fn: () => Promise<R>): Promise<R> {
  try {
    return await fn();
  } catch (err) {
    throw unavailable(`${what} is unavailable; try again later`, READ_MODEL_RETRY_AFTER_S, err);
  }
}
