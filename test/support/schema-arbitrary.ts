import fc from 'fast-check';

type Schema = Record<string, any>;

/**
 * fast-check arbitraries for the JSON Schema keywords the API's documents use (type, properties,
 * required, additionalProperties, pattern, enum, const, min/max, items, $ref into components), so
 * a test can generate requests from `/openapi.json` itself rather than from its own idea of it.
 */
export function valueOf(schema: Schema, components: Schema): fc.Arbitrary<unknown> {
  if (schema.$ref) return valueOf(resolve(schema.$ref, components), components);
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      if (schema.pattern) {
        // fast-check cannot generate from a lookahead: a leading `(?!…)` (words a pattern excludes)
        // is left out of the generator and applied as a filter.
        const pattern = new RegExp(schema.pattern as string, 'u');
        const generator = (schema.pattern as string).replace(/^\^\(\?!(?:[^()]|\([^()]*\))*\)/, '^');
        return fc.stringMatching(new RegExp(generator)).filter((s) => pattern.test(s));
      }
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40), unit: 'grapheme-ascii' });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valueOf(schema.items ?? {}, components), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 5, 5),
      });
    case 'object': {
      const properties: Schema = schema.properties ?? {};
      const names = Object.keys(properties);
      if (names.length === 0)
        return schema.additionalProperties === false
          ? fc.constant({})
          : fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const name of names) record[name] = valueOf(properties[name], components);
      return fc.record(record, { requiredKeys: schema.required ?? [] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/**
 * Values the schema refuses: a required property missing, an unknown property, a property of the
 * wrong type, or (for arrays) too few items; each built from a valid value so it is wrong in one way.
 */
export function invalidValueOf(schema: Schema, components: Schema): fc.Arbitrary<unknown> {
  if (schema.$ref) return invalidValueOf(resolve(schema.$ref, components), components);
  if (schema.type === 'array') {
    const shapes: fc.Arbitrary<unknown>[] = [fc.constant({ not: 'an array' })];
    if ((schema.minItems ?? 0) > 0) shapes.push(fc.constant([]));
    if (schema.items) shapes.push(invalidValueOf(schema.items, components).map((bad) => [bad]));
    return fc.oneof(...shapes);
  }
  if (schema.type !== 'object' || !schema.properties) return fc.constant(schema.type === 'string' ? 42 : 'not-valid');
  const required: string[] = schema.required ?? [];
  return valueOf(schema, components).chain((valid) => {
    const base = valid as Record<string, unknown>;
    const mutations: fc.Arbitrary<unknown>[] = [fc.constant({ ...base, unknownField: true }), fc.constant([base])];
    if (required.length > 0) {
      mutations.push(fc.constantFrom(...required).map((name) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== name))));
      mutations.push(
        fc.constantFrom(...required).map((name) => ({ ...base, [name]: typeof base[name] === 'number' ? 'not-a-number' : 12345 })),
      );
    }
    return fc.oneof(...mutations);
  });
}

export function resolve(ref: string, components: Schema): Schema {
  const match = /^#\/components\/([^/]+)\/([^/]+)$/.exec(ref);
  if (!match) throw new Error(`unsupported $ref ${ref}`);
  const found = components[match[1]]?.[match[2]];
  if (!found) throw new Error(`dangling $ref ${ref}`);
  return found;
}
