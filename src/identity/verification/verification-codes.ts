import type { Knex } from 'knex';
import type { Clock } from '../../clock.js';
import type { Database, Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import type { RateLimits } from '../../http/rate-limit.js';
import type { Logger } from '../../logger.js';
import { channelOf } from '../transports/transport.js';
import type { TransportRegistry } from '../transports/transport-registry.js';
import type { Identifier } from '../users/contact.js';
import { enforceCodeSendingLimits, resendAfterSeconds } from './code-sending-limits.js';
import { generateOneTimeCode, hashCode } from './one-time-code.js';
import {
  attemptCode,
  countFailedAttempt,
  expireCode,
  expireOutdatedCodes,
  replacePendingCode,
  type VerificationPurpose,
} from './verification-code-records.js';
import { verificationMessage } from './verification-message.js';
import { currentSettings } from '../../http/request-settings.js';

export type { VerificationPurpose } from './verification-code-records.js';

export interface VerificationDeps {
  db: Database;
  clock: Clock;
  transports: TransportRegistry;
  rateLimits: RateLimits;
  /** Where failures of background deliveries are reported. */
  logger?: Logger;
}

/** Spec (Limits): a code lives 10 minutes, an inbound-SSO code 60 seconds; 5 wrong attempts end it. */
/** The service's code rules (settings.codes): lifetime per purpose, attempts, digits. */
const codeRules = () => currentSettings().codes;

/**
 * How the message leaves: `await` (default) answers after the transport took it and fails with 502
 * when it could not; `background` answers at once (a caller hiding whether an account exists must not
 * let the delivery time show); `none` stores the code and sends nothing (the decoy for an address no
 * account has: every later answer looks the same as for a real one).
 */
export type CodeDelivery = 'await' | 'background' | 'none';

export interface SendVerificationCodeInput {
  identifier: Identifier;
  purpose: VerificationPurpose;
  /** The requester's IP, recorded with the code. */
  ip: string;
  /** The requester's address block (RequestInfo.addressBlock), for the per-IP limit. */
  addressBlock: string;
  /** The account the code is for (confirmations can require the same user). */
  userId?: string | undefined;
  /** A page address to send with the code; the code is added as its `code` query parameter. */
  link?: string | undefined;
  /** A transport name chosen by the user; default: the channel's default transport. */
  transport?: string | undefined;
  delivery?: CodeDelivery;
  /** The language of the message (the page's); English when absent. */
  lang?: string | undefined;
}

/**
 * Sends a new one-time code: checks that a transport serves the channel, enforces the code-sending
 * limits (429 + Retry-After), stores the code's hash (replacing the pending one), delivers the message.
 * A failed delivery leaves no usable code behind.
 */
export async function sendVerificationCode(
  deps: VerificationDeps,
  input: SendVerificationCodeInput,
): Promise<{ expiresAt: Date; resendAfterSeconds: number }> {
  const channel = channelOf(input.identifier);
  const transport = deps.transports.resolve(channel, input.transport);
  await enforceCodeSendingLimits(deps.rateLimits, {
    identifier: input.identifier.value,
    addressBlock: input.addressBlock,
  });

  const { id, code, expiresAt } = await issueVerificationCode(deps, input);
  const link = input.link === undefined ? undefined : withCode(input.link, code);
  const message = verificationMessage({
    channel,
    to: input.identifier.value,
    purpose: input.purpose,
    code,
    link,
    lifetimeSeconds: codeRules().lifetimeSeconds[input.purpose],
    lang: input.lang,
  });
  const deliver = async () => {
    try {
      await deps.transports.send(message, transport.name);
    } catch (error) {
      await expireCode(deps.db, id);
      throw error;
    }
  };
  const delivery = input.delivery ?? 'await';
  if (delivery === 'await') await deliver();
  if (delivery === 'background') {
    deliver().catch((error: unknown) =>
      deps.logger?.error({ err: error, purpose: input.purpose }, 'background code delivery failed'),
    );
  }
  return { expiresAt, resendAfterSeconds };
}

/**
 * Creates a code without sending it or applying the sending limits (the caller delivers it some other
 * way, e.g. the inbound-SSO one-time code handed to the external service).
 */
export async function issueVerificationCode(
  deps: Pick<VerificationDeps, 'db' | 'clock'>,
  input: { identifier: Identifier; purpose: VerificationPurpose; userId?: string | undefined; ip?: string },
): Promise<{ id: string; code: string; expiresAt: Date }> {
  const now = deps.clock.now();
  const code = generateOneTimeCode(codeRules().length);
  const expiresAt = new Date(now.getTime() + codeRules().lifetimeSeconds[input.purpose] * 1000);
  const id = await deps.db.transaction((trx) =>
    replacePendingCode(
      trx,
      {
        identifier: input.identifier.value,
        purpose: input.purpose,
        codeHash: hashCode(code),
        userId: input.userId,
        ip: input.ip,
        maxAttempts: codeRules().maxAttempts,
        expiresAt,
      },
      now,
    ),
  );
  return { id, code, expiresAt };
}

export interface ConfirmVerificationCodeInput {
  /** The normalised email or phone the code was sent to. */
  identifier: string;
  purpose: VerificationPurpose;
  code: string;
  /** When set, only a code issued for this user is accepted. */
  userId?: string | undefined;
}

export interface ConfirmedCode {
  /** The account the code was issued for (null for a decoy code: no account has the identifier). */
  userId: string | null;
}

export const codeExpired = () =>
  new ApiError(410, 'code_expired', 'This code is no longer valid. Ask for a new one.');

/**
 * Redeems a code: pending → used. A wrong code counts an attempt (atomically) and answers 400
 * `invalid_code` with the attempts left; the 5th wrong attempt, an expired, used or replaced code answer
 * 410 `code_expired` (a new code must be requested).
 *
 * With `trx`, the redemption is part of the caller's transaction (undone if it rolls back). A wrong
 * attempt made inside a transaction that then rolls back is counted again once it has (it must not
 * be forgotten); callers should prefer `checkVerificationCode` before their transaction, so wrong codes
 * are counted outside it, and redeem inside.
 */
export async function confirmVerificationCode(
  deps: Pick<VerificationDeps, 'db' | 'clock'>,
  input: ConfirmVerificationCodeInput,
  trx?: Knex.Transaction,
): Promise<ConfirmedCode> {
  return judgeAttempt(deps, input, true, trx);
}

/**
 * Checks a code without redeeming it (password reset: verify-code, then reset with the same code).
 * Wrong codes count exactly as in confirmVerificationCode.
 */
export async function checkVerificationCode(
  deps: Pick<VerificationDeps, 'db' | 'clock'>,
  input: ConfirmVerificationCodeInput,
): Promise<ConfirmedCode> {
  return judgeAttempt(deps, input, false);
}

async function judgeAttempt(
  deps: Pick<VerificationDeps, 'db' | 'clock'>,
  input: ConfirmVerificationCodeInput,
  redeem: boolean,
  trx?: Knex.Transaction,
): Promise<ConfirmedCode> {
  const db: Queryable = trx ?? deps.db;
  const now = deps.clock.now();
  const result = await attemptCode(
    db,
    {
      identifier: input.identifier,
      purpose: input.purpose,
      codeHash: hashCode(input.code),
      userId: input.userId,
      redeem,
    },
    now,
  );
  if (!result) {
    await expireOutdatedCodes(db, now, { identifier: input.identifier, purpose: input.purpose });
    throw codeExpired();
  }
  if (result.matched) return { userId: result.userId };
  if (trx) {
    // The caller's rollback would undo this attempt: count it again once the transaction is over.
    const id = result.id;
    trx.executionPromise.catch(() => countFailedAttempt(deps.db, id)).catch(() => undefined);
  }
  if (result.status === 'expired') throw codeExpired();
  const attemptsLeft = result.maxAttempts - result.attempts;
  throw new ApiError(
    400,
    'invalid_code',
    `This code is not right. ${attemptsLeft} ${attemptsLeft === 1 ? 'attempt' : 'attempts'} left.`,
    { attemptsLeft },
  );
}

function withCode(link: string, code: string): string {
  const url = new URL(link);
  url.searchParams.set('code', code);
  return url.toString();
}
