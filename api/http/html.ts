/**
 * HTML built from template literals where every interpolated value is escaped unless it is
 * already Html (made by `markup` itself or by `trusted`): the status pages' only way to make markup.
 */

/** Markup that is safe to insert as it is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `value` as text in HTML content or a quoted attribute. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = Html | string | number | boolean | undefined | null | readonly Part[];

function render(part: Part): string {
  if (part === undefined || part === null || part === false) return '';
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join('');
  return escapeHtml(String(part));
}

/** A tagged template: `markup\`<b>${name}</b>\`` escapes `name`; arrays are joined, undefined/false/null leave nothing. */
export function markup(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return new Html(out);
}

/** Markup this module's callers made themselves from values they checked (the QR code's SVG). */
export const trusted = (markup: string): Html => new Html(markup);
