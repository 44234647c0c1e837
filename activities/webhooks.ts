import { Webhook } from 'standardwebhooks';
import { originOf } from '../lib/redact';
import { endHttpSpan, inTrace, startClientSpan } from '../lib/tracing';
import type { WebhookEndpoint } from '../config/config';
import type { WebhookDelivery } from '../contracts/webhooks';

/**
 * The Standard Webhooks headers of one attempt: `webhook-timestamp` is the attempt's own time
 * (receivers refuse old ones), the signature is `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`.
 */
export function signedHeaders(secret: string, webhookId: string, body: string, at: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(webhookId, at, body),
  };
}

/**
 * POSTs one event to one endpoint; resolves on a 2xx answer, throws otherwise (connection
 * refused, timeout, any other status: the activity's retry policy tries again later).
 * Redirects are not followed: a receiver must name its final URL.
 */
export async function postWebhook(
  endpoint: WebhookEndpoint,
  delivery: WebhookDelivery,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  const body = JSON.stringify(delivery.event);
  const signal = options.signal
    ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
    : AbortSignal.timeout(options.timeoutMs);
  const headers = signedHeaders(endpoint.secret, delivery.webhookId, body, new Date());
  // Traced: a CLIENT span, and the receiver gets its `traceparent`. The span names the receiver by
  // its origin only: a receiver's path may hold a secret of its own.
  const target = inTrace() ? new URL(endpoint.url) : undefined;
  const traced = target
    ? startClientSpan('POST', target, { 'url.full': target.origin, 'intent_service.webhook_id': delivery.webhookId })
    : undefined;
  let response: Response;
  try {
    response = await fetch(endpoint.url, {
      method: 'POST',
      headers: traced ? { ...headers, ...traced.headers } : headers,
      body,
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    if (traced) endHttpSpan(traced.span, 'client', err as Error);
    throw new Error(
      `webhook ${originOf(endpoint.url)}: ${(err as Error).cause ? String((err as Error & { cause: Error }).cause.message) : (err as Error).message}`,
    );
  }
  await discardAnswer(response);
  if (traced) endHttpSpan(traced.span, 'client', response.status);
  // Named by its origin only: the message goes to Temporal's history and the worker's log, and a
  // receiver's path or query may hold a secret of its own.
  if (response.status < 200 || response.status > 299) throw new Error(`webhook ${originOf(endpoint.url)}: answered ${response.status}`);
}

/**
 * The most of a receiver's answer that is read. Only its status counts; a short body is read to
 * its end so that the connection can be reused, a longer one is cut off (the connection with it):
 * a receiver that answers without end must not hold the worker's memory or its activity slot.
 */
export const MAX_WEBHOOK_ANSWER_BYTES = 4096;

async function discardAnswer(response: Response): Promise<void> {
  const reader = response.body?.getReader();
  if (!reader) return;
  let read = 0;
  try {
    while (read <= MAX_WEBHOOK_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // Cut short or timed out: the status is already known.
  }
}
