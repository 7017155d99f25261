import { UsageError } from './command.js';

/**
 * `--password-stdin`: the password read from standard input instead of the command line. Arguments are
 * public on a shared machine: `ps` and /proc/<pid>/cmdline show them to every local user while the
 * command runs (argon2id keeps it running a while), and shells keep them in their history. As with
 * `docker login --password-stdin`, the first line of standard input is the password (its line ending
 * dropped). The flag is resolved here, before the command runs or is handed to a running service, so
 * neither sees it: they receive `--password=<value>` in the argument list they are given, never in
 * this process's own.
 */
export const passwordStdinFlag = '--password-stdin';

export async function withPasswordFromStdin(
  argv: readonly string[],
  readStdin: () => Promise<string>,
): Promise<string[]> {
  if (!argv.includes(passwordStdinFlag)) return [...argv];
  if (argv.some((arg) => arg === '--password' || arg.startsWith('--password='))) {
    throw new UsageError(`give --password or ${passwordStdinFlag}, not both`);
  }
  const [firstLine = ''] = (await readStdin()).split(/\r?\n/, 1);
  return argv.map((arg) => (arg === passwordStdinFlag ? `--password=${firstLine}` : arg));
}

/** All of standard input, as UTF-8 (an empty string when it is a terminal nobody types into: ^D ends it). */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
