import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { notFound } from '../../http/api-error.js';
import { findDeviceBinding, readDeviceCookie } from '../sessions/device-bindings.js';
import { listSavedAccounts, removeSavedAccount } from '../sessions/saved-accounts.js';
import type { IdentityRoutes } from './identity-api.js';

export interface SavedAccountRouteDependencies {
  db: Database;
  clock: Clock;
}

const savedAccount = z
  .object({
    id: z.uuid(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    avatarUrl: z.string().nullable(),
    lastUsedAt: z.iso.datetime(),
  })
  .meta({ id: 'SavedAccount' });

/**
 * The accounts saved on this device (its device-binding cookie), for the login screen's account list,
 * and removing one from the list. No cookie or an unknown one: an empty list.
 */
export function savedAccountRoutes(deps: SavedAccountRouteDependencies): IdentityRoutes {
  const { db, clock } = deps;
  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/auth/saved-accounts',
        summary: 'Accounts saved on this device',
        tags: ['Session'],
        security: 'none',
        responses: {
          200: {
            description: 'Saved accounts, last used first',
            schema: z.object({ accounts: z.array(savedAccount) }),
          },
        },
      },
      async (ctx) => {
        const device = await findDeviceBinding(db, readDeviceCookie(ctx));
        const accounts = device ? await listSavedAccounts(db, device) : [];
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          accounts: accounts.map(({ userId: _userId, ...account }) => ({
            ...account,
            lastUsedAt: account.lastUsedAt.toISOString(),
          })),
        };
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/auth/saved-accounts/:id',
        summary: 'Remove an account from this device’s list',
        tags: ['Session'],
        security: 'none',
        responses: {
          200: { description: 'Removed', schema: z.object({ removed: z.literal(true) }) },
          404: { description: 'No such account on this device' },
        },
      },
      async (ctx) => {
        const device = await findDeviceBinding(db, readDeviceCookie(ctx));
        if (!device || !(await removeSavedAccount(db, device, String(ctx.params.id), clock.now()))) {
          throw notFound('There is no such account on this device.');
        }
        ctx.body = { removed: true };
      },
    );
  };
}
