import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { loadUserMethodStates } from '../auth-methods/user-method-states.js';
import { isUuid } from '../uuid.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { findUserById } from '../users/user.js';
import { signOutElsewhere } from '../auth-methods/sign-out-elsewhere.js';
import { recordUnlinkedSubject } from './unlinked-subjects.js';
import type { OAuthProviderRegistry } from './oauth-provider-registry.js';

/** A provider account linked to the user, as the security settings show it. */
export interface LinkedProviderView {
  id: string;
  provider: string;
  providerName: string;
  linkedAt: Date;
  lastUsedAt: Date | null;
}

/**
 * The third-party providers linked to a user (Security section, account rule 9), and unlinking one.
 * A provider can't be unlinked when it is the user's last active sign-in method (rule 5): an OAuth-only
 * user first adds a password (or links another provider).
 */
export class LinkedProviders {
  constructor(
    private readonly db: Database,
    private readonly registry: OAuthProviderRegistry,
    private readonly notifications: SecurityNotifications,
  ) {}

  async list(
    userId: string,
  ): Promise<{ linked: LinkedProviderView[]; available: { id: string; name: string }[] }> {
    const rows: { id: string; provider: string; created_at: Date; last_used_at: Date | null }[] =
      await this.db('user_auth_methods')
        .where({ user_id: userId, type: 'oauth_provider' })
        .orderBy(['created_at', 'id'])
        .select('id', 'provider', 'created_at', 'last_used_at');
    return {
      linked: rows.map((row) => ({
        id: row.id,
        provider: row.provider,
        providerName: this.registry.get(row.provider)?.name ?? row.provider,
        linkedAt: row.created_at,
        lastUsedAt: row.last_used_at,
      })),
      available: this.registry.all().map((provider) => ({ id: provider.id, name: provider.name })),
    };
  }

  /**
   * Unlinks the provider and signs out everywhere but `keptSessionId` (the session making the change),
   * as a password change does: whoever signed in through the provider account (a thief holding it, the
   * reason to unlink it) must not keep that session or its sign-ins to applications (ASVS 5 7.4.3).
   */
  async unlink(
    userId: string,
    linkId: string,
    request: RequestInfo,
    now: Date,
    keptSessionId?: string,
  ): Promise<{ provider: string }> {
    const notLinked = new ApiError(404, 'not_linked', 'There is no such linked provider.');
    if (!isUuid(linkId)) throw notLinked;
    const unlinked = await this.db.transaction(async (trx) => {
      // The user's row is the lock every change of sign-in methods takes: two parallel unlinks can't
      // each leave the other as "the last one".
      await trx('users').where({ id: userId }).forUpdate().first('id');
      const link: { id: string; provider: string; external_subject: string } | undefined = await trx(
        'user_auth_methods',
      )
        .where({ id: linkId, user_id: userId, type: 'oauth_provider' })
        .first('id', 'provider', 'external_subject');
      if (!link) throw notLinked;
      await trx('user_auth_methods').where({ id: link.id }).delete();
      // Not linked back by whoever holds that provider account signing in through it (unlinked-subjects.ts).
      await recordUnlinkedSubject(
        trx,
        { userId, provider: link.provider, subject: link.external_subject },
        now,
      );
      const states = await loadUserMethodStates(trx, userId);
      const otherProviders = states
        .list()
        .filter((method) => method.type === 'oauth_provider' && method.isEnabled);
      const localMethod =
        states.isActive('password') ||
        states.isEnabledByUser('email_otp') ||
        states.isEnabledByUser('sms_otp');
      if (otherProviders.length === 0 && !localMethod) {
        throw new ApiError(
          409,
          'last_sign_in_method',
          'This provider is your only way to sign in: add a password or link another provider before unlinking it.',
          { provider: link.provider },
        );
      }
      const revokedSessions = await signOutElsewhere(trx, userId, keptSessionId, now);
      await writeAuditEvent(
        trx,
        {
          type: auditEventTypes.authMethodRemoved,
          userId,
          ip: request.ip,
          userAgent: request.userAgent,
          details: { method: 'oauth_provider', provider: link.provider, revokedSessions },
        },
        now,
      );
      return { provider: link.provider };
    });
    // Told once committed, like every removed sign-in method (ASVS 6.3.7).
    const user = await findUserById(this.db, userId);
    if (user) this.notifications.notify(user, { kind: 'auth_method_removed', method: 'oauth_provider' });
    return unlinked;
  }
}
