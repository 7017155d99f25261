import { parseArgs } from 'node:util';
import * as oidc from 'openid-client';
import { z } from 'zod';
import { basicOpModules } from './basic-op.js';
import { configOpModules } from './config-op.js';
import { ConformanceContext, ModuleFailure, type ConformanceModule } from './context.js';
import { rpInitiatedLogoutModules } from './rp-initiated-logout.js';

/**
 * npm run conformance -- --issuer URL --client-id ID[,ID...] --client-secret SECRET[,SECRET...]
 *   --redirect-uri URI [--post-logout-redirect-uri URI] --username EMAIL --password PASSWORD [--only ID,ID]
 *
 * Replays the OpenID Foundation's Basic OP, Config OP and RP-Initiated Logout modules that apply to a
 * code-flow-only provider, with openid-client, against any deployment: one line per module, exit 1 on
 * any failure. Every argument may come from the environment instead (CONFORMANCE_ISSUER, ...).
 * docs/conformance.md lists the modules covered and those that do not apply.
 */
const argumentsSchema = z.object({
  issuer: z.url(),
  'client-id': z.string().min(1),
  'client-secret': z.string().min(1),
  'redirect-uri': z.url(),
  'post-logout-redirect-uri': z.url().optional(),
  username: z.string().min(1),
  password: z.string().min(1),
  only: z.string().optional(),
});

const names = Object.keys(argumentsSchema.shape) as (keyof z.infer<typeof argumentsSchema>)[];
const fromEnvironment = (name: string) => process.env[`CONFORMANCE_${name.toUpperCase().replace(/-/g, '_')}`];

export const allModules: ConformanceModule[] = [
  ...configOpModules,
  ...basicOpModules,
  ...rpInitiatedLogoutModules,
];

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: Object.fromEntries(names.map((name) => [name, { type: 'string' as const }])),
    allowPositionals: false,
  });
  const parsed = argumentsSchema.safeParse(
    Object.fromEntries(names.map((name) => [name, values[name] ?? fromEnvironment(name)])),
  );
  if (!parsed.success) {
    for (const issue of parsed.error.issues) console.error(`--${issue.path.join('.')}: ${issue.message}`);
    console.error('usage: npm run conformance -- --issuer URL --client-id ID --client-secret SECRET');
    console.error('         --redirect-uri URI [--post-logout-redirect-uri URI] --username U --password P');
    return 2;
  }
  const args = parsed.data;
  const ids = args['client-id'].split(',');
  const secrets = args['client-secret'].split(',');
  if (ids.length !== secrets.length) {
    console.error('--client-id and --client-secret: as many secrets as client ids');
    return 2;
  }
  const contexts = await ConformanceContext.discover({
    issuer: new URL(args.issuer),
    clients: ids.map((id, index) => ({ id, secret: secrets[index]! })),
    redirectUri: args['redirect-uri'],
    postLogoutRedirectUri: args['post-logout-redirect-uri'],
    username: args.username,
    password: args.password,
  });
  const only = args.only?.split(',');
  const modules = only ? allModules.filter((module) => only.includes(module.id)) : allModules;
  let failed = 0;
  for (const [index, module] of modules.entries()) {
    const started = Date.now();
    try {
      await module.run(contexts[index % contexts.length]!);
      console.log(`PASS  ${module.id.padEnd(72)} ${module.plan} (${Date.now() - started} ms)`);
    } catch (error) {
      failed++;
      const reason =
        error instanceof ModuleFailure
          ? error.message
          : error instanceof oidc.ResponseBodyError
            ? `${error.error}: ${error.error_description ?? error.message}`
            : `${(error as Error).name}: ${(error as Error).message}`;
      console.log(`FAIL  ${module.id.padEnd(72)} ${module.plan}: ${reason}`);
    }
  }
  console.log(`${modules.length - failed} passed, ${failed} failed, of ${modules.length} modules`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`conformance self-check could not run: ${(error as Error).message}`);
    process.exit(2);
  },
);
