import { z } from 'zod';
import { grantRole } from '../../identity/access/user-access.js';
import { savePasswordHash } from '../../identity/passwords/password-credential.js';
import { hashPassword } from '../../identity/passwords/password-hash.js';
import { passwordSchema } from '../../identity/passwords/password-policy.js';
import { emailSchema, phoneSchema } from '../../identity/users/contact.js';
import { insertUser } from '../../identity/users/user.js';
import { UsageError, type CliCommand } from '../command.js';
import { describeZodError } from '../describe-zod-error.js';

const inputSchema = z
  .object({
    email: emailSchema.optional(),
    phone: phoneSchema.optional(),
    password: z.string({ error: 'is required' }).pipe(passwordSchema),
    role: z.array(z.string().min(1)).default([]),
    'given-name': z.string().trim().min(1).max(100).optional(),
    'family-name': z.string().trim().min(1).max(100).optional(),
  })
  .refine((input) => input.email !== undefined || input.phone !== undefined, {
    message: 'give --email or --phone (or both)',
    path: ['email'],
  });

export const usersCreateCommand: CliCommand = {
  name: 'users:create',
  usage:
    'users:create --email E [--phone P] (--password PW | --password-stdin) [--role R]... [--given-name G] [--family-name F]',
  summary: 'Create a user whose email/phone are verified, with a password and roles',
  options: {
    email: { type: 'string' },
    phone: { type: 'string' },
    password: { type: 'string' },
    role: { type: 'string', multiple: true },
    'given-name': { type: 'string' },
    'family-name': { type: 'string' },
  },
  needsDatabase: true,
  parse(values) {
    const parsed = inputSchema.safeParse(values);
    if (!parsed.success) throw new UsageError(describeZodError(parsed.error));
    return parsed.data;
  },
  async run(input: z.infer<typeof inputSchema>, context) {
    const { db, clock } = context!;
    const passwordHash = await hashPassword(input.password);
    return db.transaction(async (trx) => {
      const taken = await trx('users')
        .where((query) => {
          if (input.email) query.orWhere({ email: input.email });
          if (input.phone) query.orWhere({ phone: input.phone });
        })
        .first('id');
      if (taken) throw new UsageError('a user with this email or phone already exists');
      const user = await insertUser(trx, {
        email: input.email,
        emailVerified: input.email !== undefined,
        phone: input.phone,
        phoneVerified: input.phone !== undefined,
        givenName: input['given-name'],
        familyName: input['family-name'],
      });
      await savePasswordHash(trx, user.id, passwordHash, clock.now());
      for (const role of input.role) {
        if (!(await grantRole(trx, user.id, role))) throw new UsageError(`unknown role ${role}`);
      }
      return { id: user.id, email: user.email, phone: user.phone, roles: [...new Set(input.role)].sort() };
    });
  },
};
