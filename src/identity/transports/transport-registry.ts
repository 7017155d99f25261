import { ApiError } from '../../http/api-error.js';
import type { Logger } from '../../logger.js';
import type { Channel, OutgoingMessage, Transport } from './transport.js';

export interface TransportChoice {
  name: string;
  label: string;
}

/**
 * Routes every outgoing message to a registered transport able to deliver its channel (spec: every
 * message goes through a transport registry to the plugin that can deliver it). The first transport
 * registered for a channel is its default; a caller may name another one (the user's choice).
 */
export class TransportRegistry {
  readonly #transports: Transport[] = [];

  constructor(private readonly logger?: Logger) {}

  register(transport: Transport): this {
    if (this.#transports.some((existing) => existing.name === transport.name)) {
      throw new Error(`a transport named ${transport.name} is already registered`);
    }
    this.#transports.push(transport);
    return this;
  }

  /** Transports able to deliver to this channel, the default first. */
  transportsFor(channel: Channel): TransportChoice[] {
    return this.#transports
      .filter((transport) => transport.channels.includes(channel))
      .map(({ name, label }) => ({ name, label }));
  }

  canDeliver(channel: Channel): boolean {
    return this.#transports.some((transport) => transport.channels.includes(channel));
  }

  /**
   * The transport that will deliver to `channel`: the named one, or the default. Throws a 400 the user
   * can act on when no transport serves the channel or the name is not one of them.
   */
  resolve(channel: Channel, name?: string): Transport {
    const candidates = this.#transports.filter((transport) => transport.channels.includes(channel));
    if (candidates.length === 0) {
      throw new ApiError(
        400,
        'channel_not_supported',
        channel === 'email'
          ? 'This service can not send email. Use a phone number instead.'
          : 'This service can not send text messages. Use an email address instead.',
        { channel },
      );
    }
    if (name === undefined) return candidates[0]!;
    const chosen = candidates.find((transport) => transport.name === name);
    if (!chosen) {
      throw new ApiError(400, 'unknown_transport', `There is no transport ${name} for ${channel}.`, {
        transports: candidates.map((transport) => transport.name),
      });
    }
    return chosen;
  }

  /**
   * Delivers a message; a failed delivery becomes a 502 `delivery_failed` (the cause is logged, not
   * shown). Returns the name of the transport that delivered it.
   */
  async send(message: OutgoingMessage, transportName?: string): Promise<string> {
    const transport = this.resolve(message.channel, transportName);
    try {
      await transport.send(message);
    } catch (error) {
      this.logger?.error(
        { err: error, transport: transport.name, channel: message.channel },
        'message delivery failed',
      );
      throw new ApiError(502, 'delivery_failed', 'We could not send the message. Try again later.', {
        transport: transport.name,
      });
    }
    return transport.name;
  }

  async close(): Promise<void> {
    await Promise.all(this.#transports.map((transport) => transport.close?.()));
  }
}
