/** One Server-Sent Event as a client sees it. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * Reads a `text/event-stream` over plain fetch (the wire format, not a client library's view):
 * collects events until the server ends the stream or `signal` aborts. `onEvent` sees each as it comes.
 */
export async function readEventStream(
  url: string,
  options: { headers?: Record<string, string>; signal?: AbortSignal; onEvent?: (e: SseEvent) => void } = {},
) {
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...(options.headers ?? {}) }, signal: options.signal });
  const events: SseEvent[] = [];
  if (!response.body || response.status !== 200)
    return { status: response.status, headers: response.headers, events, text: await response.text() };
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { event: 'message', data: '' };
        const data: string[] = [];
        let any = false;
        for (const line of block.split('\n')) {
          if (line.startsWith(':') || line === '') continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') {
            data.push(value);
            any = true;
          } else if (field === 'event') event.event = value;
          else if (field === 'id') event.id = value;
        }
        if (!any) continue;
        event.data = data.join('\n');
        events.push(event);
        options.onEvent?.(event);
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  }
  return { status: response.status, headers: response.headers, events, text: '' };
}
