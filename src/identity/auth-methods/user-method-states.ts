import type { Queryable } from '../../db/database.js';
import { isUuid } from '../uuid.js';
import type { AuthMethodType } from './auth-method-type.js';
import { userAuthMethodFromRow, type UserAuthMethod, type UserAuthMethodRow } from './user-auth-methods.js';

/**
 * What a user has of each sign-in method, as the funnel and account rules need it. Some methods are
 * derived rather than stored: a password exists when the user has a password credential, email/SMS
 * codes when the email/phone is verified; a row in user_auth_methods only records that the user turned
 * such a method off (is_enabled false) or, for methods with their own secret (TOTP), the method itself.
 */
export class UserMethodStates {
  constructor(
    private readonly rows: UserAuthMethod[],
    private readonly derived: Partial<Record<AuthMethodType, boolean>>,
  ) {}

  row(type: AuthMethodType): UserAuthMethod | undefined {
    return this.rows.find((row) => row.type === type);
  }

  /** The user has what the method needs (a password, a verified contact, a confirmed TOTP secret). */
  isConfigured(type: AuthMethodType): boolean {
    if (type in this.derived) return this.derived[type] === true;
    return this.rows.some((row) => row.type === type && row.isVerified);
  }

  /** The user turned the method off. */
  isDisabled(type: AuthMethodType): boolean {
    return this.rows.some((row) => row.type === type && !row.isEnabled);
  }

  /** Configured and not turned off: usable at login. */
  isActive(type: AuthMethodType): boolean {
    return this.isConfigured(type) && !this.isDisabled(type);
  }

  /** The user explicitly enabled the method (an additional method in the funnel). */
  isEnabledByUser(type: AuthMethodType): boolean {
    return this.rows.some((row) => row.type === type && row.isEnabled && row.isVerified);
  }

  list(): UserAuthMethod[] {
    return [...this.rows];
  }
}

interface MethodStatesRow {
  email: string | null;
  email_verified: boolean;
  phone: string | null;
  phone_verified: boolean;
  has_password: boolean;
  methods: (Omit<UserAuthMethodRow, 'last_used_at' | 'created_at'> & {
    last_used_at: string | null;
    created_at: string;
  })[];
}

/**
 * The user's method states in one query (it runs at every login, after identification): the contact
 * flags, whether a password credential exists, and the user_auth_methods rows.
 */
export async function loadUserMethodStates(db: Queryable, userId: string): Promise<UserMethodStates> {
  return (await loadUserMethodStatesWith(db, userId)).states;
}

/**
 * loadUserMethodStates, and in the same statement the scalar subquery `alongside` (what the caller
 * needs with the states, e.g. a platform setting): one round trip.
 */
export async function loadUserMethodStatesWith(
  db: Queryable,
  userId: string,
  alongside?: { sql: string; bindings: Record<string, unknown> },
): Promise<{ states: UserMethodStates; read: unknown }> {
  const read = alongside ? `(${alongside.sql})` : 'null';
  // The user's columns joined to a one-row select, so `alongside` is answered for a gone user too.
  const result = (await db.raw(
    `select s.*, ${read} as read_alongside
     from (select 1) as one left join (
       select u.email, u.email_verified, u.phone, u.phone_verified,
         exists (select 1 from user_credentials c where c.user_id = u.id and c.type = 'password') as has_password,
         coalesce((select json_agg(m order by m.created_at, m.id) from user_auth_methods m where m.user_id = u.id), '[]')
           as methods
       from users u where u.id = :methodsUser
     ) as s on true`,
    // A value that is no uuid matches no user (and must not reach the uuid comparison).
    { methodsUser: isUuid(userId) ? userId : null, ...alongside?.bindings },
  )) as { rows: (Partial<MethodStatesRow> & { read_alongside: unknown })[] };
  const row = result.rows[0]!;
  const rows = (row.methods ?? []).map((method) =>
    userAuthMethodFromRow({
      ...method,
      last_used_at: method.last_used_at === null ? null : new Date(method.last_used_at),
      created_at: new Date(method.created_at),
    }),
  );
  const states = new UserMethodStates(rows, {
    password: row.has_password === true,
    email_otp: Boolean(row.email && row.email_verified),
    sms_otp: Boolean(row.phone && row.phone_verified),
  });
  return { states, read: row.read_alongside };
}
