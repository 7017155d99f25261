import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import { findDeviceBinding } from '../../sessions/device-bindings.js';
import { listSavedAccounts, type SavedAccount } from '../../sessions/saved-accounts.js';
import type { AuthFlowStep, StepContext } from '../step.js';
import { phoneEmailStep } from './phone-email.js';

// Not strict: a page's form posts its own fields (flow, step) beside these.
const accountSelectionInput = z
  .object({
    /** A saved account of this device (its id in the list). */
    account: z.string().max(64).optional(),
    /** "Other account": an email or phone typed in, as at phone-email. */
    identifier: z.string().max(320).optional(),
  })
  .refine((input) => Boolean(input.account) !== Boolean(input.identifier), {
    message: 'Choose one saved account or enter an email or phone.',
  });

async function savedAccountsOfDevice(context: StepContext): Promise<SavedAccount[]> {
  const device = await findDeviceBinding(context.db, context.request.deviceCookie);
  return device ? listSavedAccounts(context.db, device) : [];
}

function describeAccount(account: SavedAccount): string {
  const name = [account.firstName, account.lastName].filter(Boolean).join(' ');
  const contact = account.email ?? account.phone ?? '';
  return name ? `${name} (${contact})` : contact;
}

/**
 * Built-in step `account-selection` (login): who is signing in, chosen among the accounts saved on this
 * device (its device-binding cookie; the server's list, never the client's), or typed in ("Other
 * account"). It identifies exactly as `phone-email` does with the chosen account's email or phone; the
 * next step (password, code...) still proves it. Put it in the login funnel instead of phone-email.
 */
export const accountSelectionStep: AuthFlowStep<z.infer<typeof accountSelectionInput>> = {
  id: 'account-selection',
  flows: ['login'],
  input: accountSelectionInput,
  async run(context, input) {
    if (input.identifier) return phoneEmailStep.run(context, { identifier: input.identifier });
    const chosen = (await savedAccountsOfDevice(context)).find((account) => account.id === input.account);
    const identifier = chosen?.email ?? chosen?.phone;
    if (!identifier) {
      throw new ApiError(400, 'unknown_account', 'This account is not saved on this device. Choose another.');
    }
    return phoneEmailStep.run(context, { identifier });
  },
  async screen(context) {
    const accounts = await savedAccountsOfDevice(context);
    return {
      title: 'Choose an account',
      fields: [
        ...(accounts.length > 0
          ? [
              {
                name: 'account',
                type: 'select' as const,
                label: 'Saved on this device',
                options: accounts.map((account) => ({ value: account.id, label: describeAccount(account) })),
              },
            ]
          : []),
        {
          name: 'identifier',
          type: 'text',
          label: 'Other account: email or phone',
          autocomplete: 'username',
        },
      ],
      data: {
        accounts: accounts.map((account) => ({
          id: account.id,
          email: account.email,
          phone: account.phone,
          firstName: account.firstName,
          lastName: account.lastName,
          avatarUrl: account.avatarUrl,
        })),
      },
    };
  },
};
