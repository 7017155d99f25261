import type { Clock } from '../../clock.js';
import type { Messages } from '../../i18n/messages.js';
import type { Logger } from '../../logger.js';
import { ThrottledWarnings } from '../../throttled-warnings.js';
import { channelOf } from '../transports/transport.js';
import type { TransportRegistry } from '../transports/transport-registry.js';
import type { Identifier } from '../users/contact.js';
import type { User } from '../users/user.js';
import { NoticeBudget } from './notice-budget.js';
import { securityMessage, type SecurityNotice } from './security-notice.js';

/** Where a user is told of changes: their confirmed email, else their confirmed phone. */
export function primaryContactOf(user: User): Identifier | undefined {
  if (user.email && user.emailVerified) return { kind: 'email', value: user.email };
  if (user.phone && user.phoneVerified) return { kind: 'phone', value: user.phone };
  return undefined;
}

/**
 * Tells users of security changes through the transport registry, in their language. A notification
 * never fails the action it reports: it is handed to the transport in the background, after the change
 * is committed, and a failed delivery is logged, nothing more. At most a few of each kind go to one
 * user an hour (notice-budget.ts).
 */
export class SecurityNotifications {
  readonly #budget: NoticeBudget;
  readonly #warnings: ThrottledWarnings | undefined;

  constructor(
    private readonly deps: {
      transports: TransportRegistry;
      messages: Messages;
      clock: Clock;
      logger?: Logger | undefined;
    },
  ) {
    this.#budget = new NoticeBudget(deps.clock);
    this.#warnings = deps.logger && new ThrottledWarnings(deps.logger, deps.clock);
  }

  /** Stops counting other workers' notices (the budget's listener). */
  close(): void {
    this.#budget.close();
  }

  /** Sends `notice` to `to` (default: the user's primary contact); a user with no contact gets nothing. */
  notify(user: User, notice: SecurityNotice, to: Identifier | undefined = primaryContactOf(user)): void {
    if (!to) return;
    if (!this.#budget.take(user.id, notice.kind)) {
      this.#warnings?.warn(
        'security_notices_spent',
        { userId: user.id, notice: notice.kind },
        'security notices of this kind spent for the hour; not sent',
      );
      return;
    }
    const failed = (error: unknown) =>
      this.deps.logger?.error(
        { err: error, userId: user.id, notice: notice.kind },
        'security notification not delivered',
      );
    try {
      const language = this.deps.messages.pick(user.language);
      const message = securityMessage(this.deps.messages, language, notice, {
        channel: channelOf(to),
        to: to.value,
      });
      this.deps.transports.send(message).catch(failed);
    } catch (error) {
      failed(error);
    }
  }
}
