/**
 * The MCP tools' input schemas against their procedures' zod inputs: a member the procedure takes
 * is an argument of the tool, required exactly where the procedure requires it (but workspace_id,
 * which the key fills in), and nothing else is; the headers an agent sets are arguments too. The
 * JSON Schema is compiled and run on the same arguments as the zod input, so the two cannot drift.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operations } from '@/server/api/operations';
import { resourceReaders, tools, type Tool } from './tools';

function procedureInput(tool: Tool): z.ZodObject | undefined {
  const operation = operations.find((o) => o.method === tool.method && o.path === tool.path);
  expect(operation?.procedure, `${tool.name}: a procedure defines ${tool.method} ${tool.path}`).toBeTruthy();
  return operation!.procedure!.input as z.ZodObject | undefined;
}

const headerOf = (tool: Tool) => {
  const operation = operations.find((o) => o.method === tool.method && o.path === tool.path)!;
  return operation.meta.openapi?.requestHeaders as z.ZodObject | undefined;
};

/** Members of the input that a caller must send (zod refuses them left out; a default or optional() takes it). */
const requiredMembers = (schema: z.ZodObject) => Object.keys(schema.shape).filter((k) => !schema.shape[k]!.safeParse(undefined).success);

const all = [...tools().values(), resourceReaders().checkpoint];

describe('MCP tool input schemas', () => {
  it('are the procedures’ inputs: every member an argument, required where the procedure requires it', () => {
    for (const tool of all) {
      const input = procedureInput(tool);
      const members = input ? Object.keys(input.shape).filter((k) => !tool.omit?.includes(k) && tool.fixed?.[k] === undefined) : [];
      const headers = Object.keys(headerOf(tool)?.shape ?? {});
      const own = Object.keys(tool.own ?? {});
      const argsOfOperation = Object.keys(tool.inputSchema.properties as object).filter((a) => !own.includes(a));
      expect(argsOfOperation.filter((a) => tool.places.get(a)?.in !== 'header').sort(), tool.name).toEqual([...members].sort());
      expect(argsOfOperation.filter((a) => tool.places.get(a)?.in === 'header').length, tool.name).toBe(headers.length);
      const required = input ? requiredMembers(input).filter((k) => members.includes(k) && k !== 'workspace_id') : [];
      expect([...((tool.inputSchema.required as string[] | undefined) ?? [])].sort(), tool.name).toEqual(required.sort());
      for (const member of members) {
        const place = tool.places.get(member)!;
        expect(place.in, `${tool.name}.${member}`).toBe(
          tool.path.includes(`{${member}}`) ? 'path' : tool.method === 'GET' ? 'query' : 'body',
        );
      }
    }
  });

  it('take the headers an agent sets as idempotency_key, correlation_id and context_manifest_digest', () => {
    const create = tools().get('create_work')!;
    expect(Object.keys(headerOf(create)!.shape).sort()).toEqual(['idempotency-key', 'x-context-manifest-digest', 'x-correlation-id']);
    expect(create.places.get('idempotency_key')).toEqual({ in: 'header', name: 'idempotency-key' });
    expect(create.places.get('correlation_id')).toEqual({ in: 'header', name: 'x-correlation-id' });
    expect(create.places.get('context_manifest_digest')).toEqual({ in: 'header', name: 'x-context-manifest-digest' });
  });

  it('accept and refuse what the procedure’s zod input accepts and refuses', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const runId = '0b7a3b5e-54c1-4b0a-9d5e-3c2f1a0b9c8d';
    const cases: [string, Record<string, unknown>][] = [
      ['create_work', { title: 'Write the report' }],
      ['create_work', {}],
      ['create_work', { title: '' }],
      ['create_work', { title: 'x', priority: 'someday' }],
      ['create_work', { title: 'x', colour: 'red' }],
      ['finish_run', { runId, outcome: 'completed', summary: 'done' }],
      ['finish_run', { runId, outcome: 'maybe' }],
      ['finish_run', { runId }],
      ['checkpoint', { runId, label: 'half way', state: { step: 2, nested: { ok: true } } }],
      ['checkpoint', { runId, label: 'half way', state: [1, 2] }],
      ['list_tasks', { status: ['todo', 'done'] }],
      ['list_tasks', { status: ['someday'] }],
    ];
    for (const [name, args] of cases) {
      const tool = tools().get(name)!;
      const byTool = ajv.validate(tool.inputSchema, args);
      const byProcedure = procedureInput(tool)!.safeParse(args).success;
      expect(byTool, `${name} ${JSON.stringify(args)}: the tool schema agrees with the procedure`).toBe(byProcedure);
    }
  });

  it('carry the schemas the input names, so the tool schema stands alone', () => {
    const decision = tools().get('request_decision')!;
    expect(Object.keys((decision.inputSchema.$defs as object | undefined) ?? {})).toEqual(
      expect.arrayContaining(['DecisionOption', 'DecisionActionInput']),
    );
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    for (const tool of all) expect(() => ajv.compile(tool.inputSchema), tool.name).not.toThrow();
  });
});
