// The shell of the HTML pages the API serves (the status pages, and errors on their paths): one
// document layout, one Content-Security-Policy. The pages themselves are api/status/.
import { markup, type Html } from './html';

/** Where the pages' own script and style are served: a prefix of its own, so no `{wallet}` can shadow it. */
export const ASSETS = '/status-assets';

/**
 * Everything the pages load comes from this origin: their one script and one stylesheet (no inline
 * script or style), and the event stream or the page itself for updates. Nothing may frame them.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** A whole page: `main` is what the script replaces when the execution changes (`data-*` tell it what to follow). */
export function documentOf(title: string, main: Html, data: Record<string, string | undefined> = {}): string {
  const attributes = Object.entries(data)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => markup` data-${k}="${v}"`);
  return markup`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title}</title>
        <link rel="stylesheet" href="${ASSETS}/status.css" />
      </head>
      <body>
        <main id="status-main" ${attributes}>${main}</main>
        <script src="${ASSETS}/status.js" defer></script>
      </body>
    </html> `.text;
}

/** An error as a page (errorStyle `page`): its status and the exposed message, as text. */
export function errorPage(status: number, message: string): string {
  const title =
    status === 404
      ? 'Not found'
      : status === 400
        ? 'Not a valid address for this page'
        : status === 429
          ? 'Too many requests'
          : 'Not available';
  return documentOf(
    `${status} ${title}`,
    markup`<h1>${title}</h1>
      <p class="reason" role="status" data-reason="${status}">${message}</p>`,
    { final: 'true' },
  );
}
