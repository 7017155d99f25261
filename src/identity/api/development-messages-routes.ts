import { z } from 'zod';
import type { DevelopmentTransport } from '../transports/development-transport.js';
import type { IdentityRoutes } from './identity-api.js';

const query = z.object({ to: z.string().max(320).optional() });

/**
 * GET /dev/messages: the development outbox, so a developer running the service locally can read the
 * codes it "sent". Mounted only outside production (src/service.ts).
 */
export function developmentMessagesRoutes(outbox: DevelopmentTransport): IdentityRoutes {
  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/dev/messages',
        summary: 'Messages kept by the development transport (not available in production)',
        tags: ['development'],
        security: 'none',
        query,
        responses: {
          200: {
            description: 'Latest messages first',
            schema: z.object({
              messages: z.array(
                z.object({
                  channel: z.enum(['email', 'sms']),
                  to: z.string(),
                  subject: z.string(),
                  text: z.string(),
                  code: z.string().optional(),
                  link: z.string().optional(),
                  purpose: z.string().optional(),
                  sentAt: z.string(),
                }),
              ),
            }),
          },
        },
      },
      (ctx) => {
        const { to } = query.parse(ctx.query);
        const messages = to ? outbox.messagesTo(to) : outbox.all();
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          messages: messages
            .reverse()
            .map((message) => ({ ...message, sentAt: message.sentAt.toISOString() })),
        };
      },
    );
  };
}
