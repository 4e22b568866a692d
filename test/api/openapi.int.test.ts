/** The served OpenAPI document: valid OpenAPI 3.1, and saying what the API really answers. */
import { HAND_DOCUMENTED } from '@/server/api/openapi';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appRouter } from '@/server/api/root';
import { factsOf, proceduresOf } from '@/server/api/trpc-internals';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
let doc: any;
beforeAll(async () => {
  app = await startTestApp();
  const res = await app.request('GET', '/openapi.json', { key: null });
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => {
  await app?.close();
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('has clean titles, only schemas that responses use for errors, and a link back to the app', () => {
    const titles: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'title' && typeof value === 'string') titles.push(value);
          walk(value);
        }
      }
    };
    walk(doc);
    expect(titles.length).toBeGreaterThan(0);
    for (const title of titles) {
      expect(title, 'no word twice in a row').not.toMatch(/\b(\w+)\s+\1\b/i);
      expect(title.trim()).toBe(title);
    }
    // The generator's per-code error schemas ("Internal server error error (500)") describe bodies we never send.
    expect(Object.keys(doc.components.schemas).filter((n) => n.startsWith('error.'))).toEqual([]);
    expect(doc.externalDocs).toEqual({ description: expect.stringContaining('browser'), url: app.runtime.env.APP_URL });
  });

  it('cites no tracker numbers: descriptions say why, not which ticket', () => {
    // The served document is what API users read; a ticket number tells them nothing.
    expect(JSON.stringify(doc)).not.toMatch(/issue\s*#?\d+/i);
  });

  it('lists every published procedure, and the operations served outside the adapter', () => {
    const published = Object.values(proceduresOf(appRouter))
      .map((p) => factsOf(p).meta?.openapi)
      .filter((o) => o !== undefined)
      .map((o) => `${o.method.toLowerCase()} ${o.path}`)
      .concat(HAND_DOCUMENTED)
      .sort();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`))
      .sort();
    expect(documented).toEqual(published);
  });

  it('documents POST /work as 201 (200 on replay) with the contract’s error body for each error status', () => {
    const responses = doc.paths['/work'].post.responses;
    expect(Object.keys(responses).sort()).toEqual(['200', '201', '400', '401', '404', '409', '413', '415', '422', '429', '500', '503']);
    expect(Object.keys(responses['429'].headers).sort()).toEqual(
      ['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id'].sort(),
    );
    expect(responses['201'].headers['X-RateLimit-Remaining']).toBeDefined();
    // The public validator's operations are limited per address; /errors is not limited at all.
    expect(doc.paths['/agent-work-receipts/validate'].get.responses['429']).toBeDefined();
    expect(doc.paths['/agent-work-receipts/validate'].post.responses['503'].headers['Retry-After']).toBeDefined();
    expect(doc.paths['/errors'].get.responses['429']).toBeUndefined();
    expect(responses['400'].description).toContain('invalid_json');
    expect(responses['400'].description).toContain('unknown_field');
    expect(responses['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(responses['503'].headers['Retry-After']).toBeDefined();
    expect(responses['201'].headers['X-Request-Id']).toBeDefined();
    const requestBody = doc.paths['/work'].post.requestBody.content['application/json'].schema;
    expect(requestBody.additionalProperties).toBe(false);
    expect(requestBody.properties.title).toMatchObject({ type: 'string', minLength: 1, maxLength: 240 });
    expect(requestBody.properties.estimate_hours).toMatchObject({ type: 'number', minimum: 0 });
    expect(requestBody.required).toEqual(['title']);
    expect(doc.paths['/work'].post.requestBody.required).toBe(true);
    const cursor = doc.paths['/events/stream'].get.parameters.find((p: { name: string }) => p.name === 'cursor');
    expect(cursor.schema.description ?? cursor.description).toContain('nextCursor');
  });

  it('declares the bearer key and the session cookie, and leaves public routes open', () => {
    expect(doc.components.securitySchemes.ApiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.Session).toMatchObject({ type: 'apiKey', in: 'cookie' });
    expect(doc.paths['/work'].post.security).toEqual([{ ApiKey: [] }]);
    // Public operations say they take no credential (security: []), as linters ask (docs/contract.md §13.2).
    for (const [path, method] of <[string, string][]>[
      ['/errors', 'get'],
      ['/health', 'get'],
      ['/openapi.json', 'get'],
      ['/agent-work-receipts/validate', 'post'],
    ]) {
      expect(doc.paths[path][method].security, `${method} ${path}`).toEqual([]);
    }
    expect(doc.paths['/errors'].get.responses['401']).toBeUndefined();
  });

  it('declares every tag it uses, with a description, and says who publishes it under which licence', () => {
    const declared = new Map<string, string>(doc.tags.map((t: { name: string; description: string }) => [t.name, t.description]));
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const tag of operation.tags ?? []) expect(declared.get(tag), `${method} ${path}: ${tag}`).toMatch(/\w/);
      }
    }
    expect(doc.info.license).toEqual({ name: 'Apache 2.0', identifier: 'Apache-2.0' });
    expect(doc.info.contact.url).toMatch(/^http/);
  });

  it('types the event stream’s 200 as the JSON page, the SSE lease beside it, so a generated client needs no narrowing', () => {
    const stream = doc.paths['/events/stream'].get;
    expect(Object.keys(stream.responses['200'].content)).toEqual(['application/json']);
    expect(stream['x-sse']).toMatchObject({ when: 'format=sse', mediaType: 'text/event-stream' });
  });

  it('describes the error envelope of docs/contract.md §1.4', () => {
    const error = doc.components.schemas.Error;
    expect(Object.keys(error.properties.error.properties).sort()).toEqual(
      ['code', 'details', 'docsUrl', 'message', 'requestId', 'retryAfter', 'timestamp'].sort(),
    );
  });
});
