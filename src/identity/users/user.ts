import type { Queryable } from '../../db/database.js';
import type { Identifier } from './contact.js';
import { isUuid } from '../uuid.js';

/** A user record (table users). */
export interface User {
  id: string;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
  givenName: string | null;
  familyName: string | null;
  preferredUsername: string | null;
  picture: string | null;
  /** BCP 47 language tag for the messages sent to the user; null: English. */
  language: string | null;
  status: UserStatus;
  createdAt: Date;
  updatedAt: Date;
}

export type UserStatus = 'active' | 'disabled';

export interface UserRow {
  id: string;
  email: string | null;
  email_verified: boolean;
  phone: string | null;
  phone_verified: boolean;
  given_name: string | null;
  family_name: string | null;
  preferred_username: string | null;
  picture: string | null;
  language: string | null;
  status: UserStatus;
  created_at: Date;
  updated_at: Date;
}

export function userFromRow(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified,
    phone: row.phone,
    phoneVerified: row.phone_verified,
    givenName: row.given_name,
    familyName: row.family_name,
    preferredUsername: row.preferred_username,
    picture: row.picture,
    language: row.language ?? null,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function findUserById(db: Queryable, id: string): Promise<User | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await db<UserRow>('users').where({ id }).first();
  return row ? userFromRow(row) : undefined;
}

export async function findUserByIdentifier(db: Queryable, identifier: Identifier): Promise<User | undefined> {
  const row = await db<UserRow>('users')
    .where(identifier.kind === 'email' ? { email: identifier.value } : { phone: identifier.value })
    .first();
  return row ? userFromRow(row) : undefined;
}

export interface NewUser {
  email?: string | undefined;
  emailVerified?: boolean;
  phone?: string | undefined;
  phoneVerified?: boolean;
  givenName?: string | undefined;
  familyName?: string | undefined;
  language?: string | undefined;
}

export async function insertUser(db: Queryable, user: NewUser): Promise<User> {
  const [row] = await db<UserRow>('users').insert(
    {
      email: user.email ?? null,
      email_verified: user.emailVerified ?? false,
      phone: user.phone ?? null,
      phone_verified: user.phoneVerified ?? false,
      given_name: user.givenName ?? null,
      family_name: user.familyName ?? null,
      language: user.language ?? null,
    },
    '*',
  );
  return userFromRow(row!);
}
