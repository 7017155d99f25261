import { z } from 'zod';
import { envelopeSchema } from '../../events/envelope.js';
import { catalogJsonSchemas } from '../../events/event-catalog.js';
import type { DocumentedRouter } from '../../http/documented-router.js';
import { platformEvents } from '../events/platform-events.js';

/** GET /events/schemas: the envelope and each platform message type as JSON Schema (public, like OpenAPI). */
export function eventSchemaRoutes() {
  let document: Record<string, unknown> | undefined;
  return (api: DocumentedRouter): void => {
    api.add(
      {
        method: 'get',
        path: '/events/schemas',
        summary: 'JSON Schemas (draft 2020-12) of the event envelope and of every platform message type',
        tags: ['Events'],
        security: 'none',
        responses: {
          200: {
            description:
              'envelope: the common envelope; messageTypes: the envelope of each type with its data',
            schema: z.object({
              envelope: z.record(z.string(), z.unknown()),
              messageTypes: z.record(z.string(), z.record(z.string(), z.unknown())),
            }),
          },
        },
      },
      (ctx) => {
        document ??= {
          envelope: envelopeSchema.toJSONSchema({ target: 'draft-2020-12', io: 'output' }),
          messageTypes: catalogJsonSchemas(platformEvents),
        };
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.body = document;
      },
    );
  };
}
