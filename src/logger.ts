import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'identity' },
    redact: {
      paths: ['password', '*.password', 'secret', '*.secret', 'client_secret', 'token', '*.token'],
      censor: '[redacted]',
    },
  });
}
