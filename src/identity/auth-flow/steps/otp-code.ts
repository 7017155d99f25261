import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import type { RateLimits } from '../../../http/rate-limit.js';
import type { Logger } from '../../../logger.js';
import { findUserByIdentifier } from '../../users/user.js';
import {
  abandonLoginAttempt,
  assertLoginAllowed,
  recordLoginFailure,
  recordLoginSuccess,
} from '../../brute-force/login-protection.js';
import type { TransportRegistry } from '../../transports/transport-registry.js';
import type { Identifier } from '../../users/contact.js';
import { confirmVerificationCode, sendVerificationCode } from '../../verification/verification-codes.js';
import { loginAttemptOf } from '../login-attempt.js';
import type { AuthFlowStep } from '../step.js';

export interface OtpCodeStepDeps {
  transports: TransportRegistry;
  rateLimits: RateLimits;
  logger?: Logger;
}

const formFlag = z.preprocess(
  (value) => (value === 'true' || value === '1' || value === 'on' ? true : value === 'false' ? false : value),
  z.boolean(),
);

export const otpCodeInput = z.object({
  /** The code received; absent (or `send: true`) asks for a code to be sent. */
  code: z.string().trim().max(20).optional(),
  send: formFlag.optional(),
  /** The transport the user chose, when several can deliver to the identifier. */
  transport: z.string().max(50).optional(),
});
export type OtpCodeInput = z.infer<typeof otpCodeInput>;

/**
 * Built-in step `otp-code`: login by a one-time code sent to the flow's identifier (found by the
 * `phone-email` step) through the transports, purpose `login`. It can replace the password in a funnel.
 *
 * One step, two requests: without a code (or with `send: true`) it sends one and answers 202
 * `code_sent`, the flow staying on this step; with `code` it checks it. The send goes through the
 * code-sending limits; an identifier no account has gets a decoy code (stored, never sent) and the
 * same answers, so the step does not tell who has an account. The check goes through the brute-force
 * protection and the code's own 5-attempt limit.
 */
export function createOtpCodeStep(deps: OtpCodeStepDeps): AuthFlowStep<OtpCodeInput> {
  return {
    id: 'otp-code',
    authenticates: true,
    input: otpCodeInput,
    async run(context, input) {
      const { db, clock, session, request } = context;
      const identifier = flowIdentifier(session.tempData);
      const userId = session.userId;
      if (!input.code || input.send) {
        const sent = await sendVerificationCode(
          { db, clock, transports: deps.transports, rateLimits: deps.rateLimits, logger: deps.logger },
          {
            identifier,
            purpose: 'login',
            ip: request.ip,
            addressBlock: request.addressBlock,
            userId,
            transport: input.transport,
            delivery: userId ? 'background' : 'none',
            lang: session.context.lang,
          },
        );
        throw new ApiError(
          202,
          'code_sent',
          `We sent a sign-in code to ${identifier.value}. Enter it to continue.`,
          {
            expiresAt: sent.expiresAt.toISOString(),
            resendAfterSeconds: sent.resendAfterSeconds,
          },
        );
      }

      const protection = { db, clock };
      const attempt = loginAttemptOf(context, 'otp');
      const claim = await assertLoginAllowed(protection, attempt);
      try {
        const confirmed = await confirmVerificationCode(
          { db, clock },
          { identifier: identifier.value, purpose: 'login', code: input.code },
        );
        // A decoy code (no account) matched by luck is still a failure. So is a code sent to an email
        // or phone the account replaced since the flow found it: whoever still reads the old one (often
        // why it was replaced) must not sign in with it.
        const owner = userId ? await findUserByIdentifier(db, identifier) : undefined;
        if (!userId || confirmed.userId !== userId || owner?.id !== userId) {
          throw new ApiError(400, 'invalid_code', 'This code is not right.');
        }
      } catch (error) {
        if (error instanceof ApiError && error.status < 500) {
          await recordLoginFailure(protection, {
            ...attempt,
            identifier: identifier.value,
            ...request,
            reason: error.code,
            claim,
          });
        } else {
          // Not judged (the database failed): the attempt's places go back, nothing counted.
          await abandonLoginAttempt(protection, claim).catch(() => undefined);
        }
        throw error;
      }
      await recordLoginSuccess(protection, { ...attempt, userId, ...request, method: 'otp', claim });
      return { userId, authMethod: 'otp' };
    },
  };
}

function flowIdentifier(tempData: Record<string, unknown>): Identifier {
  const value = tempData.identifier;
  const kind = tempData.identifierKind;
  if (typeof value !== 'string' || (kind !== 'email' && kind !== 'phone')) {
    throw new ApiError(
      409,
      'identifier_required',
      'This step needs the email or phone first (the phone-email step).',
    );
  }
  return { kind, value };
}
