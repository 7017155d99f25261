import type { Identifier } from '../users/contact.js';

/** How a message reaches a person: an email address or a phone number. */
export type Channel = 'email' | 'sms';

/** A message the core decided to send (it never knows which plugin delivers it). */
export interface OutgoingMessage {
  channel: Channel;
  /** Email address or E.164 phone number. */
  to: string;
  /** Email subject; SMS transports ignore it. */
  subject: string;
  text: string;
  /** The one-time code the message carries, if any (the SMS webhook passes it on separately). */
  code?: string;
  /** The link the message carries, if any. */
  link?: string;
  /** Why it is sent, e.g. the verification purpose `reset_password`. */
  purpose?: string;
}

/**
 * A transport plugin (spec: Core and plugins, kind transport): delivers messages of the channels it
 * declares. `send` resolves once the message is handed over (SMTP server, SMS gateway); it throws when
 * the message could not be delivered.
 */
export interface Transport {
  /** Unique name, shown to users choosing how to receive a code (e.g. `smtp`, `sms-webhook`). */
  readonly name: string;
  /** A short human label ("Email", "Text message"). */
  readonly label: string;
  readonly channels: readonly Channel[];
  send(message: OutgoingMessage): Promise<void>;
  /** Releases connections (called when the service closes). */
  close?(): Promise<void> | void;
}

export function channelOf(identifier: Identifier): Channel {
  return identifier.kind === 'email' ? 'email' : 'sms';
}
