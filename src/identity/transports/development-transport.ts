import type { Logger } from '../../logger.js';
import type { Channel, OutgoingMessage, Transport } from './transport.js';

export interface DeliveredMessage extends OutgoingMessage {
  sentAt: Date;
}

/** How many messages the development outbox keeps (the oldest go first). */
const outboxSize = 500;

/**
 * The development transport: delivers nothing, keeps the latest messages in memory and logs each one,
 * so tests and a developer running the service locally can read the codes (also at
 * GET /api/v2/identity/dev/messages outside production). Never used in production (config refuses it).
 */
export class DevelopmentTransport implements Transport {
  readonly name = 'development';
  readonly label = 'Development outbox';
  readonly #messages: DeliveredMessage[] = [];
  channels: Channel[];

  constructor(
    channels: Channel[] = ['email', 'sms'],
    private readonly logger?: Logger,
  ) {
    this.channels = channels;
  }

  // Not `async` before the push: a message sent in the background is in the outbox at once.
  send(message: OutgoingMessage): Promise<void> {
    this.#messages.push({ ...message, sentAt: new Date() });
    if (this.#messages.length > outboxSize) this.#messages.shift();
    this.logger?.info(
      { channel: message.channel, to: message.to, code: message.code, link: message.link },
      `development transport: ${message.subject}`,
    );
    return Promise.resolve();
  }

  /** The last message sent to this address or phone number. */
  latestTo(recipient: string): DeliveredMessage | undefined {
    return this.messagesTo(recipient).at(-1);
  }

  /** Messages to this recipient, oldest first. */
  messagesTo(recipient: string): DeliveredMessage[] {
    const wanted = recipient.trim().toLowerCase();
    return this.#messages.filter((message) => message.to.toLowerCase() === wanted);
  }

  all(): DeliveredMessage[] {
    return [...this.#messages];
  }

  clear(): void {
    this.#messages.length = 0;
  }
}
