/**
 * Which operations of an OpenAPI document a recorded run (Schemathesis's HAR report) reached past
 * 404: each request is matched to the one operation of its method whose path template it fits,
 * the template with the most literal segments first (`/executions/lookup` before
 * `/executions/{wallet}`). Pure: the caller reads the files.
 */

/** What a HAR entry holds that this needs. */
export interface RecordedExchange {
  method: string;
  url: string;
  status: number;
}

export interface OperationReach {
  /** `METHOD /path/{template}` as the document names it. */
  operation: string;
  /** How many answers of each status the operation got. */
  statuses: Record<number, number>;
  /** Whether some answer was not 404 (and the request was answered at all). */
  reached: boolean;
}

interface Template {
  method: string;
  path: string;
  pattern: RegExp;
  literals: number;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function templatesOf(paths: Record<string, Record<string, unknown>>): Template[] {
  const templates: Template[] = [];
  for (const [path, item] of Object.entries(paths)) {
    const segments = path.split('/');
    const pattern = new RegExp(
      '^' + segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/') + '$',
    );
    const literals = segments.filter((s) => s !== '' && !s.startsWith('{')).length;
    for (const method of Object.keys(item).filter((k) => METHODS.includes(k)))
      templates.push({ method: method.toUpperCase(), path, pattern, literals });
  }
  return templates.sort((a, b) => b.literals - a.literals);
}

/** Every operation of `paths` (an OpenAPI `paths` object) with the statuses the exchanges got; unmatched exchanges are left out. */
export function operationReach(paths: Record<string, Record<string, unknown>>, exchanges: readonly RecordedExchange[]): OperationReach[] {
  const templates = templatesOf(paths);
  const reach = new Map<string, OperationReach>(
    templates.map((t) => [`${t.method} ${t.path}`, { operation: `${t.method} ${t.path}`, statuses: {}, reached: false }]),
  );
  for (const exchange of exchanges) {
    const path = new URL(exchange.url).pathname;
    const template = templates.find((t) => t.method === exchange.method.toUpperCase() && t.pattern.test(path));
    if (!template) continue;
    const entry = reach.get(`${template.method} ${template.path}`)!;
    entry.statuses[exchange.status] = (entry.statuses[exchange.status] ?? 0) + 1;
    if (exchange.status !== 404 && exchange.status > 0) entry.reached = true;
  }
  return [...reach.values()].sort((a, b) => (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0));
}

/** The exchanges of a HAR document (`log.entries[]`); entries without an answer count as status 0. */
export function harExchanges(har: unknown): RecordedExchange[] {
  const entries = (har as { log?: { entries?: unknown[] } })?.log?.entries;
  if (!Array.isArray(entries)) throw new Error('not a HAR document: no log.entries');
  return entries.map((e) => {
    const entry = e as { request?: { method?: string; url?: string }; response?: { status?: number } };
    if (typeof entry.request?.method !== 'string' || typeof entry.request.url !== 'string')
      throw new Error('a HAR entry without request.method and request.url');
    return { method: entry.request.method, url: entry.request.url, status: entry.response?.status ?? 0 };
  });
}
