/**
 * fast-check arbitraries from the JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the served
 * OpenAPI document: values a schema accepts, and values broken in exactly one place.
 *
 * Why it is written here: the npm registry has no maintained library for this. json-schema-fast-check
 * (0.0.6, one release) is built on fast-check 1 and faker 4; zod-fast-check works from Zod 3
 * schemas and fast-check < 4 (this project has Zod 4 and fast-check 4), and it would test the
 * code against itself rather than against the document clients read.
 *
 * It covers only the keywords the document's request bodies and parameters use (test/api/
 * hostile-input.int.test.ts scans the document and fails when a new one appears, so this file is
 * extended before a keyword is silently ignored): type (string, number, integer, boolean, object,
 * array), properties, required, additionalProperties (false or a schema), propertyNames (only
 * {type: string}), enum, minLength, maxLength, pattern, format (uuid, date-time), minimum,
 * maximum, items, minItems, maxItems, $ref (local), anyOf (only as zod writes a nullable field:
 * one schema or null), and the annotations default and description.
 */
import fc from 'fast-check';

export type JsonSchema = Record<string, unknown>;

/** Keywords this generator understands; anything else in a request schema is a gap to fill here. */
export const SUPPORTED_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'enum',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'items',
  'minItems',
  'maxItems',
  '$ref',
  'anyOf',
  'default',
  'description',
  'example',
]);

export interface SchemaContext {
  /** Resolves a local `$ref` (`#/components/schemas/…`). */
  resolve(ref: string): JsonSchema;
  /** Values for a named property from elsewhere (ids of real records) instead of the schema's. */
  override?(name: string, schema: JsonSchema): fc.Arbitrary<unknown> | undefined;
  /** Arrays are drawn at most this long (the document allows 500 tasks; one request need not carry them). */
  arrayCap?: number;
}

/** Every keyword used in `schema` and the schemas under it (following local $refs once). */
export function keywordsIn(
  schema: unknown,
  ctx: Pick<SchemaContext, 'resolve'>,
  out = new Set<string>(),
  seen = new Set<unknown>(),
): Set<string> {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return out;
  seen.add(schema);
  const s = schema as JsonSchema;
  for (const key of Object.keys(s)) out.add(key);
  if (typeof s.$ref === 'string') keywordsIn(ctx.resolve(s.$ref), ctx, out, seen);
  for (const sub of Object.values((s.properties as Record<string, unknown>) ?? {})) keywordsIn(sub, ctx, out, seen);
  for (const key of ['items', 'additionalProperties', 'propertyNames']) keywordsIn(s[key], ctx, out, seen);
  for (const branch of Array.isArray(s.anyOf) ? s.anyOf : []) keywordsIn(branch, ctx, out, seen);
  return out;
}

/** For `anyOf: [schema, {type: 'null'}]` (a nullable field, as zod writes it): that schema. */
function nullableOf(s: JsonSchema): JsonSchema | undefined {
  if (!Array.isArray(s.anyOf)) return undefined;
  const others = (s.anyOf as JsonSchema[]).filter((b) => b.type !== 'null');
  if (others.length !== 1 || s.anyOf.length !== 2) throw new Error(`anyOf other than "a schema or null": ${JSON.stringify(s.anyOf)}`);
  return others[0];
}

function deref(schema: JsonSchema, ctx: SchemaContext): JsonSchema {
  let s = schema;
  for (let hops = 0; typeof s.$ref === 'string'; hops++) {
    if (hops > 10) throw new Error(`$ref loop at ${String(s.$ref)}`);
    s = ctx.resolve(s.$ref);
  }
  return s;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** An object with properties, or with free-form members only (`additionalProperties: {}`). */
const isFreeForm = (s: JsonSchema) => s.type === 'object' && !s.properties && s.additionalProperties !== false;

/**
 * Keys of free-form objects: printable text, never `__proto__` (the API refuses that key
 * everywhere: a test of its own covers it, so a "valid" value must not carry it).
 */
const freeKey = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__');

/** Any JSON value a client might store in a free-form field, a few levels deep. */
const jsonData: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ maxLength: 20 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(freeKey, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Text of `min` to `max` code points (JSON Schema counts code points), boundaries included. */
function text(min: number, max: number): fc.Arbitrary<string> {
  const typical = Math.min(max, Math.max(min, 24));
  return fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength: typical }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: min, maxLength: typical }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: max, maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength: min }) },
  );
}

/** A value `schema` accepts. */
export function validValue(schema: JsonSchema, ctx: SchemaContext): fc.Arbitrary<unknown> {
  const s = deref(schema, ctx);
  const nullable = nullableOf(s);
  if (nullable) return fc.oneof({ weight: 3, arbitrary: validValue(nullable, ctx) }, fc.constant(null));
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  switch (s.type) {
    case 'string': {
      const min = num(s.minLength) ?? 0;
      const max = num(s.maxLength) ?? 200;
      // Uppercase hex is allowed by the document's pattern, so it is drawn too.
      if (s.format === 'uuid')
        return fc.oneof(
          { weight: 4, arbitrary: fc.uuid() },
          fc.uuid().map((u) => u.toUpperCase()),
        );
      if (s.format === 'date-time') {
        return fc
          .date({ min: new Date('2001-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true })
          .map((d) => d.toISOString());
      }
      if (typeof s.pattern === 'string') {
        return fc.stringMatching(new RegExp(s.pattern)).filter((v) => [...v].length >= min && [...v].length <= max);
      }
      return text(min, max);
    }
    case 'integer': {
      const min = num(s.minimum) ?? -(2 ** 31);
      const max = num(s.maximum) ?? 2 ** 31;
      return fc.oneof({ weight: 4, arbitrary: fc.integer({ min, max }) }, fc.constantFrom(min, max));
    }
    case 'number': {
      const min = num(s.minimum) ?? -1e9;
      const max = num(s.maximum) ?? 1e9;
      return fc.oneof({ weight: 4, arbitrary: fc.double({ min, max, noNaN: true, noDefaultInfinity: true }) }, fc.constantFrom(min, max));
    }
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const minLength = num(s.minItems) ?? 0;
      const cap = ctx.arrayCap ?? 3;
      const maxLength = Math.max(minLength, Math.min(num(s.maxItems) ?? cap, cap));
      return fc.array(validValue((s.items as JsonSchema) ?? {}, ctx), { minLength, maxLength });
    }
    case 'object': {
      if (isFreeForm(s)) return fc.dictionary(freeKey, jsonData, { maxKeys: 5 });
      const properties = (s.properties as Record<string, JsonSchema>) ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) model[name] = ctx.override?.(name, sub) ?? validValue(sub, ctx);
      return fc.record(model, { requiredKeys: (s.required as string[]) ?? [] });
    }
    default:
      // No type: any JSON value (the document has none of these in request schemas today).
      return jsonData;
  }
}

/** A value broken in one place: `how` says where and how; `documented` is false for breaks the document does not spell out. */
/**
 * Stands for the number 1e400 in a drawn value: JSON.stringify cannot write a number beyond a
 * double (it writes Infinity as null), so `jsonText` writes this one into the text.
 */
const OVERFLOWING_NUMBER = '\u2063overflowing number\u2063';

/** A drawn value as the JSON text a client would send (OVERFLOWING_NUMBER as 1e400). */
export function jsonText(value: unknown): string {
  return JSON.stringify(value).replaceAll(JSON.stringify(OVERFLOWING_NUMBER), '1e400');
}

export interface Broken {
  value: unknown;
  how: string;
  /**
   * True: the document itself says the value is wrong (wrong type, range, length, enum, pattern,
   * required, unknown field), so the answer must be a 4xx. False: hostile text the document does
   * not mention (NUL, lone surrogates), which must still never be a 5xx.
   */
  documented: boolean;
}

type Path = (string | number)[];

const pointer = (path: Path) => (path.length === 0 ? '(body)' : path.join('.'));

/** A copy of `root` with the value at `path` replaced (or, for `undefined`, removed). */
function replaceAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === undefined) delete parent[last];
  else parent[last] = value;
  return copy;
}

/** Unknown member names, some of them names every JS object inherits. */
const UNKNOWN_FIELDS = ['unexpected_field', 'constructor', 'toString'];

function breaksOf(schema: JsonSchema, value: unknown, path: Path, root: unknown, ctx: SchemaContext, out: Broken[], nullOk = false): void {
  const s = deref(schema, ctx);
  const nullable = nullableOf(s);
  // A nullable field breaks as its schema does, except that null is a value it takes.
  if (nullable) return breaksOf(nullable, value, path, root, ctx, out, true);
  const at = (v: unknown, how: string, documented = true) =>
    out.push({ value: replaceAt(root, path, v), how: `${pointer(path)}: ${how}`, documented });
  if (!nullOk) at(null, 'null');
  switch (s.type) {
    case 'string':
      at(12345, 'a number for a string');
      at(['x'], 'an array for a string');
      if (Array.isArray(s.enum)) at(`not-${String(s.enum[0])}`, 'a value outside the enum');
      if (typeof s.maxLength === 'number') {
        at('x'.repeat(s.maxLength + 1), `maxLength ${s.maxLength} + 1`);
        at('x'.repeat(Math.max(100_000, s.maxLength * 10)), 'an over-long string');
      }
      if (typeof s.minLength === 'number' && s.minLength > 0) at('', `shorter than minLength ${s.minLength}`);
      if (s.format === 'uuid') {
        at('not-a-uuid', 'not a uuid');
        at(`${typeof value === 'string' ? value : '00000000-0000-4000-8000-000000000000'}0`, 'a uuid with one character more');
      } else if (s.format === 'date-time') at('2026-13-45T99:00:00Z', 'not a date-time');
      else if (typeof s.pattern === 'string' && !Array.isArray(s.enum)) at(' does not match ', `not matching ${s.pattern}`);
      if (!Array.isArray(s.enum) && !s.format && typeof s.pattern !== 'string') {
        at('nul\u0000inside', 'a NUL character', false);
        at('lone \ud800 surrogate', 'a lone surrogate', false);
        if ((num(s.minLength) ?? 0) > 0) at(' \t\n ', 'only whitespace', false);
      }
      return;
    case 'integer':
    case 'number':
      at('5', 'a numeric string for a number');
      at(true, 'a boolean for a number');
      if (typeof s.minimum === 'number') at(s.minimum - 1, `below minimum ${s.minimum}`);
      if (typeof s.maximum === 'number') {
        at(s.maximum + 1, `above maximum ${s.maximum}`);
        at(1e308, 'a huge number');
      }
      if (s.type === 'integer') {
        at((num(s.minimum) ?? 0) + 0.5, 'a fraction for an integer');
        at(Number.MAX_SAFE_INTEGER + 2, 'an integer past 2^53');
      }
      return;
    case 'boolean':
      at('true', 'a string for a boolean');
      at(1, 'a number for a boolean');
      return;
    case 'array': {
      const items = (s.items as JsonSchema) ?? {};
      at({ 0: 'x' }, 'an object for an array');
      at('x', 'a string for an array');
      const list = Array.isArray(value) ? value : [];
      const sample = list[0] ?? fc.sample(validValue(items, ctx), { numRuns: 1, seed: 42 })[0];
      if (typeof s.maxItems === 'number')
        at(
          Array.from({ length: s.maxItems + 1 }, () => structuredClone(sample)),
          `maxItems ${s.maxItems} + 1`,
        );
      if (typeof s.minItems === 'number' && s.minItems > 0) at(list.slice(0, s.minItems - 1), `fewer than minItems ${s.minItems}`);
      if (list.length > 0) breaksOf(items, list[0], [...path, 0], root, ctx, out);
      return;
    }
    case 'object': {
      at([value], 'an array for an object');
      at('x', 'a string for an object');
      if (isFreeForm(s)) {
        // Anything JSON holds goes inside, but for what no store keeps: U+0000, a lone surrogate,
        // a number beyond a double (400 validation_failed, docs/agents.md: Bodies).
        const obj = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
        at({ ...obj, note: 'a\u0000b' }, 'U+0000 inside free-form JSON');
        at({ ...obj, nested: ['ok', { text: 'x\ud800' }] }, 'a lone surrogate inside free-form JSON');
        at({ ...obj, ['k\udc00']: 1 }, 'a lone surrogate in a member name inside free-form JSON');
        at({ ...obj, big: OVERFLOWING_NUMBER }, 'a number beyond a double (1e400) inside free-form JSON');
        return;
      }
      const obj = (value ?? {}) as Record<string, unknown>;
      for (const name of (s.required as string[]) ?? []) if (name in obj) at(replaceAt(obj, [name], undefined), `${name} missing`);
      if (s.additionalProperties === false) for (const name of UNKNOWN_FIELDS) at({ ...obj, [name]: 'x' }, `an unknown field ${name}`);
      const properties = (s.properties as Record<string, JsonSchema>) ?? {};
      for (const [name, sub] of Object.entries(properties))
        if (Object.hasOwn(obj, name)) breaksOf(sub, obj[name], [...path, name], root, ctx, out);
      return;
    }
    default:
      return;
  }
}

/** Every one-place break of a valid value, one of them drawn. */
export function brokenValue(schema: JsonSchema, ctx: SchemaContext): fc.Arbitrary<Broken> {
  return validValue(schema, ctx).chain((valid) => {
    const out: Broken[] = [];
    breaksOf(schema, valid, [], valid, ctx, out);
    return fc.constantFrom(...out);
  });
}
