import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DocumentedRouter } from '../../src/http/documented-router.js';
import { createLogger } from '../../src/logger.js';

// A router of its own on a bare Koa app: what the router does, without a whole service behind it.
const api = new DocumentedRouter('/api/test', createLogger('silent'));
api.add(
  {
    method: 'get',
    path: '/items/:itemId',
    summary: 'One item',
    security: 'none',
    params: z.object({ itemId: z.uuid().describe('The item') }),
    query: z.object({
      limit: z.coerce.number().int().min(1).max(100).default(20).describe('Items per page'),
      status: z.enum(['active', 'disabled']).optional(),
    }),
    responses: { 200: { description: 'The item' }, 400: { description: 'Bad query or path' } },
  },
  (ctx, _body, { query, params }) => {
    // Typed from the schemas: a number and a string, not the raw query strings.
    const limit: number = query.limit;
    const itemId: string = params.itemId;
    ctx.body = { itemId, limit, status: query.status ?? null };
  },
);

let server: http.Server;
let base: string;
beforeAll(async () => {
  const app = new Koa();
  app.use(api.router.routes());
  server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/test`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const itemId = '3f2a6c1e-8d4b-4c7a-9e2f-1b5d6a7c8e9f';

describe('DocumentedRouter: query and path parameters', () => {
  it('hands the handler the parsed values (coerced, defaults applied)', async () => {
    const defaults = await fetch(`${base}/items/${itemId}`);
    expect(await defaults.json()).toEqual({ itemId, limit: 20, status: null });
    const given = await fetch(`${base}/items/${itemId}?limit=5&status=disabled`);
    expect(await given.json()).toEqual({ itemId, limit: 5, status: 'disabled' });
  });

  it.each([
    ['a query value out of range', `/items/${itemId}?limit=1000`, 'query.limit'],
    ['a query value of the wrong kind', `/items/${itemId}?limit=many`, 'query.limit'],
    ['a query value outside the enum', `/items/${itemId}?status=gone`, 'query.status'],
    ['a malformed path parameter', '/items/not-a-uuid', 'path.itemId'],
  ])('refuses %s with 400 in the JSON error body naming it', async (_label, path, named) => {
    const response = await fetch(`${base}${path}`);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; message: string; details: { path: string }[] };
    expect(body).toMatchObject({ error: 'invalid_request', message: expect.any(String) });
    expect(body.details.map((detail) => detail.path)).toEqual([named]);
  });

  it('documents both in the OpenAPI document', () => {
    const document = api.openApiDocument({ title: 't', version: '1', serverUrl: 'http://x' }) as {
      paths: Record<string, { get: { parameters: Record<string, unknown>[] } }>;
    };
    const parameters = document.paths['/items/{itemId}']!.get.parameters;
    expect(parameters).toEqual([
      {
        name: 'itemId',
        in: 'path',
        required: true,
        schema: expect.objectContaining({ type: 'string', format: 'uuid' }),
      },
      {
        name: 'limit',
        in: 'query',
        required: false,
        description: 'Items per page',
        schema: expect.objectContaining({ type: 'integer', minimum: 1, maximum: 100 }),
      },
      {
        name: 'status',
        in: 'query',
        required: false,
        schema: expect.objectContaining({ enum: ['active', 'disabled'] }),
      },
    ]);
  });
});
