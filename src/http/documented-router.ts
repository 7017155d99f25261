import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { ApiError } from './api-error.js';
import { jsonApiRouter } from './json-api.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface OperationSpec<
  Body extends z.ZodType = z.ZodType,
  Query extends z.ZodObject = z.ZodObject,
  Params extends z.ZodObject = z.ZodObject,
> {
  method: Method;
  /** Path below the router's prefix, koa style (`/sessions/:id`). */
  path: string;
  summary: string;
  tags?: string[];
  /** How the caller authenticates: a bearer access token, the refresh cookie, or nothing. */
  security: 'bearer' | 'refresh-cookie' | 'none';
  /**
   * The operation also needs a recent authentication (a sign-in or re-authentication within the
   * router's window): the router's `reauthentication` guard runs after the `bearer` one.
   */
  reauthentication?: true;
  /** JSON request body schema; the handler receives the parsed value. */
  body?: Body;
  /**
   * Query string and path parameters: parsed before the handler (bad values are a 400 in the JSON
   * error body) and documented as the operation's parameters. Query values arrive as strings (or
   * arrays when repeated): use z.coerce for numbers and booleans.
   */
  query?: Query;
  params?: Params;
  /** Status → description and (JSON) schema of the answer. Error statuses use the common error body. */
  responses: Record<number, { description: string; schema?: z.ZodType }>;
}

/** The parsed query and path parameters of an operation (empty objects when it declares none). */
export interface OperationInput<
  Query extends z.ZodObject = z.ZodObject,
  Params extends z.ZodObject = z.ZodObject,
> {
  query: z.infer<Query>;
  params: z.infer<Params>;
}

export type OperationHandler<
  Body extends z.ZodType,
  Query extends z.ZodObject = z.ZodObject,
  Params extends z.ZodObject = z.ZodObject,
> = (ctx: Context, body: z.infer<Body>, input: OperationInput<Query, Params>) => Promise<void> | void;

const errorBodySchema = z
  .object({
    error: z.string().describe('Machine-readable code'),
    message: z.string().describe('What happened, for a human'),
    details: z.unknown().optional(),
  })
  .meta({ id: 'Error' });

/**
 * What a router enforces from an operation's declaration: `bearer` runs before every operation declared
 * `security: 'bearer'`, `reauthentication` after it on those declared `reauthentication: true`. Enforced
 * by construction: a route can't be documented as authenticated and forget the check.
 */
export interface DeclaredGuards {
  bearer?: Middleware;
  reauthentication?: Middleware;
}

/**
 * A JSON API router whose routes are declared with their schemas once: the same zod schema parses the
 * request and documents it in the generated OpenAPI 3.1 document (served by the API itself).
 */
export class DocumentedRouter {
  readonly router: Router;
  readonly #operations: OperationSpec[] = [];

  constructor(
    readonly prefix: string,
    logger: Logger,
    private readonly declaredGuards: DeclaredGuards = {},
  ) {
    this.router = jsonApiRouter(prefix, logger);
  }

  add<
    Body extends z.ZodType,
    Query extends z.ZodObject = z.ZodObject,
    Params extends z.ZodObject = z.ZodObject,
  >(
    spec: OperationSpec<Body, Query, Params>,
    ...stack: [...Middleware[], OperationHandler<Body, Query, Params>]
  ): this {
    this.#operations.push(spec as unknown as OperationSpec);
    const handler = stack.pop() as OperationHandler<Body, Query, Params>;
    const guards = [...this.#declaredGuardsOf(spec), ...(stack as Middleware[])];
    this.router[spec.method](spec.path, ...guards, async (ctx) => {
      const input = {
        query: spec.query ? parseInput(spec.query, ctx.query, 'query') : {},
        params: spec.params ? parseInput(spec.params, ctx.params, 'path') : {},
      } as OperationInput<Query, Params>;
      const body = spec.body ? spec.body.parse(ctx.request.body ?? {}) : undefined;
      await handler(ctx as Context, body as z.infer<Body>, input);
    });
    return this;
  }

  #declaredGuardsOf(spec: OperationSpec): Middleware[] {
    const { bearer, reauthentication } = this.declaredGuards;
    if (spec.reauthentication && (spec.security !== 'bearer' || !reauthentication)) {
      throw new Error(`${spec.method} ${spec.path}: re-authentication needs a bearer route and its guard`);
    }
    return [
      ...(spec.security === 'bearer' && bearer ? [bearer] : []),
      ...(spec.reauthentication && reauthentication ? [reauthentication] : []),
    ];
  }

  /** The OpenAPI 3.1 document of every operation added so far. */
  openApiDocument(info: { title: string; version: string; serverUrl: string }): Record<string, unknown> {
    const schemas: Record<string, unknown> = {};
    const toSchema = (schema: z.ZodType, io: 'input' | 'output') => {
      const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<
        string,
        unknown
      >;
      const { $schema: _dialect, $defs, ...rest } = json;
      Object.assign(schemas, $defs as Record<string, unknown> | undefined);
      return JSON.parse(JSON.stringify(rest).replaceAll('#/$defs/', '#/components/schemas/'));
    };
    const paths: Record<string, Record<string, unknown>> = {};
    for (const operation of this.#operations) {
      const path = operation.path.replace(/:([A-Za-z_]+)/g, '{$1}');
      const declaredParams = operation.params?.shape ?? {};
      const parameters = [
        ...[...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => {
          const declared = declaredParams[match[1]!] as z.ZodType | undefined;
          return {
            name: match[1],
            in: 'path',
            required: true,
            schema: declared ? toSchema(declared, 'input') : { type: 'string' },
          };
        }),
        ...Object.entries((operation.query?.shape ?? {}) as Record<string, z.ZodType>).map(
          ([name, schema]) => ({
            name,
            in: 'query',
            required: !schema.safeParse(undefined).success,
            ...(schema.description ? { description: schema.description } : {}),
            schema: toSchema(schema, 'input'),
          }),
        ),
      ];
      const responses = Object.fromEntries(
        Object.entries(operation.responses).map(([status, response]) => {
          const schema = response.schema ?? (Number(status) >= 400 ? errorBodySchema : undefined);
          return [
            status,
            {
              description: response.description,
              ...(schema ? { content: { 'application/json': { schema: toSchema(schema, 'output') } } } : {}),
            },
          ];
        }),
      );
      (paths[path] ??= {})[operation.method] = {
        summary: operation.summary,
        tags: operation.tags,
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(operation.security === 'bearer' ? { security: [{ bearer: [] }] } : {}),
        ...(operation.reauthentication ? { 'x-reauthentication-required': true } : {}),
        ...(operation.security === 'refresh-cookie' ? { security: [{ refreshCookie: [] }] } : {}),
        ...(operation.body
          ? {
              requestBody: {
                required: true,
                content: { 'application/json': { schema: toSchema(operation.body, 'input') } },
              },
            }
          : {}),
        responses,
      };
    }
    toSchema(errorBodySchema, 'output');
    return {
      openapi: '3.1.0',
      info: { title: info.title, version: info.version },
      servers: [{ url: `${info.serverUrl}${this.prefix}` }],
      paths,
      components: {
        schemas,
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          refreshCookie: { type: 'apiKey', in: 'cookie', name: 'service_id_refresh_token' },
        },
      },
    };
  }
}

/**
 * Parses the query or the path parameters; a bad value is a 400 invalid_request whose details name
 * the parameter (`query.limit`, `path.clientId`), in the JSON error body.
 */
function parseInput(schema: z.ZodObject, values: unknown, where: 'query' | 'path'): Record<string, unknown> {
  const parsed = schema.safeParse(values ?? {});
  if (parsed.success) return parsed.data as Record<string, unknown>;
  throw new ApiError(
    400,
    'invalid_request',
    `The request's ${where === 'query' ? 'query string' : 'path'} is not valid.`,
    parsed.error.issues.map((issue) => ({ path: [where, ...issue.path].join('.'), message: issue.message })),
  );
}
