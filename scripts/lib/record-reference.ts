import { executionRecordSchema, prepareBodySchema } from '../../api/executions/contract';

type Schema = {
  type?: string;
  enum?: readonly unknown[];
  const?: unknown;
  description?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: readonly string[];
};

/** A field's type as a reader wants it: string, integer, object, one of …, true. */
function typeOf(s: Schema): string {
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (s.const !== undefined) return `\`${String(s.const)}\``;
  return s.type ?? 'any';
}

/** What the schema bounds: a pattern, a range. */
function limitsOf(s: Schema): string {
  const parts: string[] = [];
  if (s.pattern) parts.push(`\`${s.pattern.replace(/\|/g, '\\|')}\``);
  if (s.minimum !== undefined || s.maximum !== undefined) parts.push(`${s.minimum ?? ''}..${s.maximum ?? ''}`);
  return parts.join(' ');
}

/**
 * A table of an object schema's fields, one level of nesting deep: name, type, whether it is always
 * there, its limits and its description. Rendered into docs/api-executions.md from the schemas the OpenAPI
 * document serves, so the page cannot drift from the contract.
 */
export function renderSchemaReference(schema: Schema): string {
  const rows: string[] = ['| field | type | always | limits | set when, what |', '|---|---|---|---|---|'];
  const add = (name: string, field: Schema, required: boolean) =>
    rows.push(
      `| \`${name}\` | ${typeOf(field)} | ${required ? 'yes' : ''} | ${limitsOf(field)} | ${(field.description ?? '').replace(/\|/g, '\\|')} |`,
    );
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    add(name, field, (schema.required ?? []).includes(name));
    const inner = field.items ?? field;
    for (const [sub, subField] of Object.entries(inner.properties ?? {}))
      add(`${name}${field.type === 'array' ? '[]' : ''}.${sub}`, subField, (inner.required ?? []).includes(sub));
  }
  return rows.join('\n');
}

/** The execution record's reference (docs/api-executions.md "The execution record"). */
export const renderRecordReference = () => renderSchemaReference(executionRecordSchema as unknown as Schema);

/** Prepare's body and its limits (docs/api-executions.md "The execution record"). */
export const renderPrepareReference = () => renderSchemaReference(prepareBodySchema as unknown as Schema);
