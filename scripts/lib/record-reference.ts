import { executionRecordSchema } from '../../api/executions/contract';

type Schema = { type?: string; enum?: readonly unknown[]; const?: unknown; description?: string; properties?: Record<string, Schema> };

/** A field's type as a reader wants it: string, integer, object, one of …, true. */
function typeOf(s: Schema): string {
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (s.const !== undefined) return `\`${String(s.const)}\``;
  return s.type ?? 'any';
}

/**
 * The execution record's reference for docs/api.md, rendered from the contract's schema (the one
 * the OpenAPI document serves): every field, whether it is always there, and when it is set.
 */
export function renderRecordReference(): string {
  const schema = executionRecordSchema as unknown as Schema & { required: readonly string[] };
  const rows: string[] = ['| field | type | always | set when, what |', '|---|---|---|---|'];
  const add = (name: string, field: Schema, required: boolean) =>
    rows.push(`| \`${name}\` | ${typeOf(field)} | ${required ? 'yes' : ''} | ${(field.description ?? '').replace(/\|/g, '\\|')} |`);
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    add(name, field, schema.required.includes(name));
    const nested = (field as Schema & { items?: Schema }).items?.properties ?? field.properties;
    const nestedRequired =
      (field as { items?: { required?: string[] } }).items?.required ?? (field as { required?: string[] }).required ?? [];
    for (const [sub, subField] of Object.entries(nested ?? {}))
      add(`${name}${field.type === 'array' ? '[]' : ''}.${sub}`, subField, nestedRequired.includes(sub));
  }
  return rows.join('\n');
}
