import type { Json } from './openapi-parts';

type Operation = { parameters?: Array<Json & { $ref?: string }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { parameters?: Record<string, Json> } };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * The methods the OpenAPI document gives a concrete path, each path parameter checked against its
 * schema's pattern: `/api/v1/executions/w/submit` is the submit path only, never an execution named
 * `submit` (the GET route's pattern, which the router's own path matching cannot express). Empty
 * when no path of the document takes it (the router then answers, a 404 or a route's own 400).
 */
export function contractMethods(doc: Document): (path: string) => Set<string> {
  const parameter = (p: Json & { $ref?: string }) =>
    (p.$ref ? doc.components.parameters?.[p.$ref.split('/').pop()!] : p) as { name: string; in: string; schema?: { pattern?: string } };
  const matchers = Object.entries(doc.paths).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => {
        const patterns = new Map(
          (operation.parameters ?? [])
            .map(parameter)
            .filter((p) => p.in === 'path')
            .map((p) => [p.name, p.schema?.pattern === undefined ? undefined : new RegExp(p.schema.pattern, 'u')]),
        );
        const segments = template.split('/');
        return (path: string): string | undefined => {
          const parts = path.split('/');
          if (parts.length !== segments.length) return undefined;
          for (let i = 0; i < parts.length; i++) {
            const name = /^\{(\w+)\}$/.exec(segments[i]!)?.[1];
            if (name === undefined) {
              if (parts[i] !== segments[i]) return undefined;
              continue;
            }
            let value: string;
            try {
              value = decodeURIComponent(parts[i]!);
            } catch {
              return undefined;
            }
            const pattern = patterns.get(name);
            if (value === '' || (pattern && !pattern.test(value))) return undefined;
          }
          return method.toUpperCase();
        };
      }),
  );
  return (path) => new Set(matchers.map((m) => m(path)).filter((m): m is string => m !== undefined));
}

/** The `Allow` header of a set of methods (HEAD beside GET, as the router writes it). */
export const allowHeader = (methods: ReadonlySet<string>): string =>
  [...(methods.has('GET') ? ['HEAD', 'GET'] : []), ...['POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => methods.has(m))].join(', ');
