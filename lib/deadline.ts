/**
 * `promise`'s value, or `undefined` once `deadline` (a Date.now() time) passes first. The request
 * behind it is not cancelled nor sent again: a node still busy with it is not given it twice.
 */
export async function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  // No deadline (reconcile reads everything): a timer of Infinity would fire at once.
  if (!Number.isFinite(deadline)) return promise;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  // A late answer's failure is nobody's to handle: the caller already moved on.
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
