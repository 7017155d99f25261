import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { listActiveFieldDefinitions } from './field-definitions.js';
import { saveProfileValues } from './profile-values.js';
import { validateProfile, type ProfileInput } from './validate-profile.js';

/**
 * The profile part of creating an account, inside its transaction: the answers the `profile` step
 * gathered, checked again against the definitions now (one may have become required meanwhile). A
 * required field with no `profile` step in the registration funnel is the administrator's mistake,
 * said as such, rather than accounts created without it.
 */
export async function checkRegistrationProfile(
  trx: Queryable,
  tempData: Record<string, unknown>,
): Promise<Record<string, string>> {
  const definitions = await listActiveFieldDefinitions(trx);
  const answers = tempData.profile as ProfileInput | undefined;
  if (answers === undefined) {
    if (definitions.some((field) => field.required)) {
      throw new ApiError(
        400,
        'profile_required',
        'Registration asks for profile fields: the registration funnel must include the profile step.',
      );
    }
    return {};
  }
  return validateProfile(definitions, answers);
}

export async function saveRegistrationProfile(
  trx: Queryable,
  userId: string,
  values: Record<string, string>,
  now: Date,
): Promise<void> {
  await saveProfileValues(trx, userId, values, now);
}
