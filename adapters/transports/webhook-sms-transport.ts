import crypto from 'node:crypto';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';
import { fetchOutsideRequests } from '../../src/outside-requests.js';

export interface WebhookSmsTransportOptions {
  /** The SMS gateway's endpoint; receives a JSON POST per message. */
  url: string;
  /** Shared secret of the HMAC signature (at least 32 characters). */
  secret: string;
  timeoutMs?: number;
}

export const signatureHeader = 'x-identity-signature';
export const timestampHeader = 'x-identity-timestamp';

/**
 * The HMAC-SHA-256 signature of a webhook request: hex of HMAC(secret, `<timestamp>.<body>`). The
 * gateway recomputes it over the raw body and the timestamp header, compares in constant time, and
 * refuses stale timestamps (replays).
 */
export function signWebhookBody(secret: string, timestamp: string, body: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * SMS through an HTTP gateway: POST {to, text, code?} as JSON, signed with an HMAC header, so any
 * provider can be plugged in with a small relay. Any answer other than 2xx is a failed delivery.
 */
export class WebhookSmsTransport implements Transport {
  readonly name = 'sms-webhook';
  readonly label = 'Text message';
  readonly channels = ['sms'] as const;

  constructor(private readonly options: WebhookSmsTransportOptions) {}

  async send(message: OutgoingMessage): Promise<void> {
    const body = JSON.stringify({
      to: message.to,
      text: message.text,
      ...(message.code === undefined ? {} : { code: message.code }),
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const response = await fetchOutsideRequests(this.options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [timestampHeader]: timestamp,
        [signatureHeader]: signWebhookBody(this.options.secret, timestamp, body),
      },
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    // Drain the body so the connection can be reused.
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new Error(`SMS gateway answered ${response.status}`);
  }
}
