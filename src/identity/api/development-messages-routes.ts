import type { Middleware } from 'koa';
import { z } from 'zod';
import { ApiError } from '../../http/api-error.js';
import { isFromThisMachine } from '../../http/loopback-request.js';
import type { DevelopmentTransport } from '../transports/development-transport.js';
import type { IdentityRoutes } from './identity-api.js';

const query = z.object({ to: z.string().max(320).optional() });

/**
 * Requests from other machines find nothing here (the same 404 as an unknown path), unless the
 * operator opted in (DEV_MESSAGES_REMOTE, e.g. for a development VM).
 */
function onlyFromThisMachine(allowRemote: boolean): Middleware {
  return async function fromThisMachine(ctx, next) {
    if (!allowRemote && !isFromThisMachine(ctx)) {
      throw new ApiError(404, 'not_found', 'There is no such endpoint.');
    }
    await next();
  };
}

/**
 * GET /dev/messages: the development outbox, so a developer running the service locally can read the
 * codes and reset links it "sent" (everyone's: whoever reads it can take over any account). Mounted
 * only outside production (src/service.ts), and answering only requests made on this machine.
 */
export function developmentMessagesRoutes(
  outbox: DevelopmentTransport,
  options: { allowRemote: boolean },
): IdentityRoutes {
  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/dev/messages',
        summary:
          'Messages kept by the development transport (not in production; only from this machine unless DEV_MESSAGES_REMOTE)',
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
      onlyFromThisMachine(options.allowRemote),
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
