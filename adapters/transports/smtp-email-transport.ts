import nodemailer from 'nodemailer';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';

export interface SmtpEmailTransportOptions {
  /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://... (TLS from the start). */
  url: string;
  /** The From header, e.g. `Identity <no-reply@example.com>`. */
  from: string;
}

/**
 * Email through an SMTP server, with nodemailer (the de-facto Node.js mail library: STARTTLS, auth,
 * pooling, correct MIME encoding). Connections are pooled and time out instead of hanging a request.
 */
export class SmtpEmailTransport implements Transport {
  readonly name = 'smtp';
  readonly label = 'Email';
  readonly channels = ['email'] as const;
  readonly #mailer: ReturnType<typeof nodemailer.createTransport>;

  constructor(private readonly options: SmtpEmailTransportOptions) {
    this.#mailer = nodemailer.createTransport({
      url: options.url,
      pool: true,
      maxConnections: 5,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  }

  async send(message: OutgoingMessage): Promise<void> {
    await this.#mailer.sendMail({
      from: this.options.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
    });
  }

  close(): void {
    this.#mailer.close();
  }
}
