/**
 * The TypeScript type of the values a JSON schema (written `as const`) accepts, so that a request's
 * type is derived from the very schema its route validates with and the two cannot drift apart.
 * It reads the part of JSON Schema the request schemas use: `type` (object, string, integer,
 * number, boolean, array), `properties` with `required`, `items`, `enum` and `const`. Anything
 * else narrows nothing (a `pattern` is still a string). A schema it cannot read is `unknown`, which
 * no route can use by mistake.
 */
export type FromSchema<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly const: infer C }
    ? C
    : S extends { readonly type: 'string' }
      ? string
      : S extends { readonly type: 'integer' | 'number' }
        ? number
        : S extends { readonly type: 'boolean' }
          ? boolean
          : S extends { readonly type: 'array'; readonly items: infer I }
            ? FromSchema<I>[]
            : S extends { readonly type: 'object'; readonly properties: infer P }
              ? ObjectOf<P, S extends { readonly required: readonly (infer R)[] } ? R : never>
              : S extends { readonly type: 'object' }
                ? Record<string, unknown>
                : unknown;

/** An object with the `required` properties and the others optional, spelled out as one type. */
type ObjectOf<P, Required> = Flat<
  { -readonly [K in keyof P & Required]: FromSchema<P[K]> } & { -readonly [K in Exclude<keyof P, Required>]?: FromSchema<P[K]> }
>;
type Flat<T> = { [K in keyof T]: T[K] } & {};
