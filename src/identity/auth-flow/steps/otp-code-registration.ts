import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import type { Identifier } from '../../users/contact.js';
import { findUserByIdentifier } from '../../users/user.js';
import {
  confirmVerificationCode,
  sendVerificationCode,
  type VerificationDeps,
} from '../../verification/verification-codes.js';
import type { AuthFlowStep, StepContext } from '../step.js';

const formFlag = z.preprocess(
  (value) => (value === 'true' || value === '1' || value === 'on' ? true : value === 'false' ? false : value),
  z.boolean(),
);

export const registrationCodeInput = z.object({
  /** The code received; absent with `send: true` asks for a new one. */
  code: z.string().trim().max(20).optional(),
  send: formFlag.optional(),
  /** The transport the user chose, when several can deliver to the identifier. */
  transport: z.string().max(50).optional(),
});
export type RegistrationCodeInput = z.infer<typeof registrationCodeInput>;

function flowIdentifier(tempData: Record<string, unknown>): Identifier {
  const value = tempData.identifier;
  const kind = tempData.identifierKind;
  if (typeof value !== 'string' || (kind !== 'email' && kind !== 'phone')) {
    throw new ApiError(409, 'identifier_required', 'This step needs the email or phone first.');
  }
  return { kind, value };
}

/**
 * Step `otp-code` of the registration flow (spec: registration requires a verified method): a
 * 6-character code sent to the new email or phone (purpose contact_verify, through the transports and
 * the code-sending limits). The code is sent as soon as the step is reached; `send: true` asks for a
 * new one. A right code proves the contact; if an account already has it, its owner is told so here.
 */
export function createRegistrationCodeStep(
  deps: Omit<VerificationDeps, 'db' | 'clock'>,
): AuthFlowStep<RegistrationCodeInput> {
  const send = async ({ db, clock, session, request }: StepContext, transport?: string) => {
    const identifier = flowIdentifier(session.tempData);
    const sent = await sendVerificationCode(
      { ...deps, db, clock },
      {
        identifier,
        purpose: 'contact_verify',
        ip: request.ip,
        addressBlock: request.addressBlock,
        transport,
        lang: session.context.lang,
      },
    );
    return { codeExpiresAt: sent.expiresAt.toISOString(), resendAfterSeconds: sent.resendAfterSeconds };
  };

  return {
    id: 'otp-code',
    flows: ['registration'],
    input: registrationCodeInput,
    async prepare(context) {
      return { tempData: { codeSent: await send(context) } };
    },
    async run(context, input) {
      const { db, clock, session } = context;
      const identifier = flowIdentifier(session.tempData);
      if (!input.code || input.send) {
        const sent = await send(context, input.transport);
        throw new ApiError(202, 'code_sent', `We sent a new code to ${identifier.value}.`, sent);
      }
      await confirmVerificationCode(
        { db, clock },
        { identifier: identifier.value, purpose: 'contact_verify', code: input.code },
      );
      if (await findUserByIdentifier(db, identifier)) {
        throw new ApiError(
          409,
          'account_exists',
          `An account with ${identifier.value} already exists. Sign in instead, or reset its password.`,
        );
      }
      return {
        tempData: { verifiedIdentifier: identifier.value, verifiedIdentifierKind: identifier.kind },
        authMethod: 'otp',
      };
    },
    screen: ({ session }) => {
      const identifier = session.tempData.identifier as string | undefined;
      return {
        title:
          'Confirm your ' + (session.tempData.identifierKind === 'phone' ? 'phone number' : 'email address'),
        description: identifier ? `We sent a code to ${identifier}.` : 'We sent you a code.',
        fields: [
          {
            name: 'code',
            type: 'one-time-code',
            label: 'Code',
            required: true,
            autocomplete: 'one-time-code',
          },
        ],
        ...(identifier ? { data: { identifier, ...(session.tempData.codeSent as object | undefined) } } : {}),
      };
    },
  };
}
