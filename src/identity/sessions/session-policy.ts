/**
 * The time rules of main-auth sessions besides their absolute 30 days (sessions.ts); configured by
 * SESSION_IDLE_MINUTES and REAUTH_WINDOW_MINUTES (src/config.ts).
 */
export interface SessionPolicy {
  /**
   * A session with no activity for this long has ended (ASVS 7.3.1): its refresh token is refused and
   * its access tokens can no longer use the account. Activity is a login, a refresh or a
   * re-authentication. Default 7 days: a client in use refreshes at least every 15 minutes (the access
   * token's lifetime), so only a device left unused for a week loses its session, while a forgotten or
   * stolen refresh cookie stops working a week after its last use instead of 30 days after the login.
   */
  idleTimeoutSeconds: number;
  /**
   * Changing a contact or a sign-in method needs the session to have authenticated its user (login or
   * re-authentication) this recently (ASVS 6.3.x/7.5.1): a stolen access token alone is not enough.
   * Default 5 minutes: long enough to finish the change the re-authentication was asked for, short
   * enough that an unattended signed-in screen doesn't stay open for such changes.
   */
  reauthenticationMaxAgeSeconds: number;
}

/** A session whose last activity is at or before this moment is idle: it has ended. */
export function idleCutoff(policy: SessionPolicy, now: Date): Date {
  return new Date(now.getTime() - policy.idleTimeoutSeconds * 1000);
}
