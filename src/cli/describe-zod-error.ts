import type { z } from 'zod';

/** "--email: must be an email address; --password: must have at least 8 characters" */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `--${String(issue.path[0])}: ${issue.message}` : issue.message))
    .join('; ');
}
