/**
 * How the operator ran the CLI, for the usage lines it prints: `npm run idp --` from this repository
 * (npm names the script it runs in npm_lifecycle_event), the installed bin's own name otherwise.
 */
export const binName = 'identity-service';

export function invokedAs(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_lifecycle_event === 'idp' ? 'npm run idp --' : binName;
}
