import { z } from 'zod';
import { listActiveFieldDefinitions } from '../../profile-fields/field-definitions.js';
import { validateProfile } from '../../profile-fields/validate-profile.js';
import type { AuthFlowStep, StepField } from '../step.js';

const profileInput = z.record(z.string().max(64), z.union([z.string().max(2000), z.number(), z.boolean()]));

/**
 * Step `profile` of the registration flow: the profile fields an administrator defined
 * (user_field_definitions: title, type, required, validation, order), shown as one screen and
 * validated here on the server. The answers wait in the flow (tempData.profile) until the account is
 * created; the finisher checks them again against the definitions of that moment.
 */
export const profileStep: AuthFlowStep<z.infer<typeof profileInput>> = {
  id: 'profile',
  flows: ['registration'],
  input: profileInput,
  async run(context, input) {
    const definitions = await listActiveFieldDefinitions(context.db);
    return { tempData: { profile: validateProfile(definitions, input) } };
  },
  async screen(context) {
    const definitions = await listActiveFieldDefinitions(context.db);
    return {
      title: 'About you',
      fields: definitions.map((field): StepField => ({
        name: field.key,
        type: field.type,
        label: field.title,
        required: field.required,
        ...(field.validation.options ? { options: field.validation.options } : {}),
      })),
    };
  },
};
