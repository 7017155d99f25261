import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { requestLogFields } from './http/request-context.js';

export type Logger = PinoLogger;

/** `destination`: where the lines go instead of stdout (tests read them). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'identity' },
    // The id of the request being served, in every line written while serving it.
    mixin: requestLogFields,
    redact: {
      paths: ['password', '*.password', 'secret', '*.secret', 'client_secret', 'token', '*.token'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
