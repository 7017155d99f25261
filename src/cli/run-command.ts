import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ApiError } from '../http/api-error.js';
import type { CommandResult } from './control-channel.js';
import {
  CommandRefused,
  UsageError,
  type CliCommand,
  type CommandContext,
  type OptionValues,
} from './command.js';
import { binName } from './invoked-as.js';
import { clientsCreateCommand, clientsDisableCommand, clientsListCommand } from './commands/clients.js';
import {
  allowedMethodsGetCommand,
  allowedMethodsSetCommand,
  funnelsGetCommand,
  funnelsSetCommand,
} from './commands/auth-flow-admin.js';
import {
  clientsDeleteCommand,
  clientsEnableCommand,
  clientsGetCommand,
  clientsRotateSecretCommand,
  clientsUpdateCommand,
} from './commands/client-admin.js';
import {
  usersDisableCommand,
  usersEnableCommand,
  usersFindCommand,
  usersRevokeSessionsCommand,
  usersUnlockCommand,
} from './commands/user-admin.js';
import {
  deadLettersListCommand,
  deadLettersReplayCommand,
  deadLettersShowCommand,
} from './commands/crm-dead-letters.js';
import { keysGenerateCommand } from './commands/keys-generate.js';
import { migrateCommand } from './commands/migrate.js';
import { usersCreateCommand } from './commands/users-create.js';
import {
  profileFieldsCreateCommand,
  profileFieldsDeleteCommand,
  profileFieldsListCommand,
  profileFieldsUpdateCommand,
} from './commands/profile-field-admin.js';

export const commands: CliCommand[] = [
  migrateCommand,
  usersCreateCommand,
  clientsCreateCommand,
  clientsListCommand,
  clientsDisableCommand,
  clientsGetCommand,
  clientsUpdateCommand,
  clientsEnableCommand,
  clientsDeleteCommand,
  clientsRotateSecretCommand,
  funnelsGetCommand,
  funnelsSetCommand,
  allowedMethodsGetCommand,
  allowedMethodsSetCommand,
  usersFindCommand,
  usersDisableCommand,
  usersEnableCommand,
  usersUnlockCommand,
  usersRevokeSessionsCommand,
  profileFieldsListCommand,
  profileFieldsCreateCommand,
  profileFieldsUpdateCommand,
  profileFieldsDeleteCommand,
  keysGenerateCommand,
  deadLettersListCommand,
  deadLettersShowCommand,
  deadLettersReplayCommand,
];

export function findCommand(name: string | undefined): CliCommand | undefined {
  return commands.find((command) => command.name === name);
}

/** `invokedAs`: how the operator ran the CLI (`identity-service`, `npm run idp --`). */
export function helpText(invokedAs = binName): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  return [
    `usage: ${invokedAs} <command> [options]`,
    '',
    ...commands.map(
      (command) =>
        `  ${command.name.padEnd(width)}  ${command.summary}\n  ${' '.repeat(width)}  ${command.usage}`,
    ),
    '',
  ].join('\n');
}

/**
 * `--client-id -x3F...` as `--client-id=-x3F...`: a generated client id or secret may start with a
 * dash, which parseArgs would otherwise refuse as an option-like value. A following word that is one
 * of the command's own options is left alone, so a forgotten value is still reported.
 */
function withDashedValuesAttached(args: string[], options: CliCommand['options']): string[] {
  const takesValue = (arg: string) => arg.startsWith('--') && options[arg.slice(2)]?.type === 'string';
  const isOption = (arg: string) =>
    arg.startsWith('--') && Object.hasOwn(options, arg.slice(2).split('=')[0]!);
  const attached: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!;
    const next = args[index + 1];
    if (takesValue(arg) && next !== undefined && next.startsWith('-') && !isOption(next)) {
      attached.push(`${arg}=${next}`);
      index += 1;
    } else {
      attached.push(arg);
    }
  }
  return attached;
}

/**
 * Runs one command line and returns what to print and the exit code: 0 with JSON on stdout, 2 for bad
 * input (with the usage) or a command refused (CommandRefused: one line), 1 for anything else. Used by
 * the CLI itself and by a running service that answers a forwarded command (with the name the CLI was
 * invoked as, for the usage lines).
 */
export async function runCommand(
  argv: string[],
  openContext: () => Promise<CommandContext | undefined>,
  invokedAs = binName,
): Promise<CommandResult> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help') {
    return { exitCode: name === undefined ? 2 : 0, stdout: '', stderr: helpText(invokedAs) };
  }
  const command = findCommand(name);
  if (!command) {
    return { exitCode: 2, stdout: '', stderr: `error: unknown command ${name}\n\n${helpText(invokedAs)}` };
  }
  try {
    let values;
    try {
      ({ values } = parseArgs({
        args: withDashedValuesAttached(rest, command.options),
        options: command.options,
        strict: true,
        allowPositionals: false,
      }));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const input = command.parse ? command.parse(values as OptionValues) : values;
    const context = command.needsDatabase ? await openContext() : undefined;
    const result = await command.run(input as never, context);
    return { exitCode: 0, stdout: `${JSON.stringify(result, null, 2)}\n`, stderr: '' };
  } catch (error) {
    if (error instanceof UsageError) {
      return {
        exitCode: 2,
        stdout: '',
        stderr: `error: ${error.message}\nusage: ${invokedAs} ${command.usage}\n`,
      };
    }
    if (error instanceof ApiError) {
      return {
        exitCode: 2,
        stdout: '',
        stderr: `error: ${error.message}\nusage: ${invokedAs} ${command.usage}\n`,
      };
    }
    if (error instanceof CommandRefused) {
      return { exitCode: 2, stdout: '', stderr: `error: ${error.message}\n` };
    }
    if (error instanceof z.ZodError) {
      return {
        exitCode: 2,
        stdout: '',
        stderr: `error: ${error.issues.map((issue) => issue.message).join('; ')}\n`,
      };
    }
    return { exitCode: 1, stdout: '', stderr: `error: ${(error as Error).message}\n` };
  }
}
