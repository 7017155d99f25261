import type { ParseArgsConfig } from 'node:util';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';

export interface CommandContext {
  db: Database;
  clock: Clock;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** One `npm run idp -- <name>` command. Its result is printed as JSON on stdout. */
export interface CliCommand {
  name: string;
  usage: string;
  summary: string;
  options: Options;
  /** Commands that don't touch the database run without opening it. */
  needsDatabase: boolean;
  /** Checks the options before anything is opened; throws UsageError. Returns what `run` receives. */
  parse?(values: OptionValues): unknown;
  run(input: never, context: CommandContext | undefined): Promise<unknown>;
}

export type OptionValues = Record<string, string | string[] | boolean | undefined>;

/** Bad input on the command line: printed without a stack trace, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A command that can't run as things are: its one-line reason, exit code 2, no usage. */
export class CommandRefused extends Error {
  override name = 'CommandRefused';
}
