import nodemailer from 'nodemailer';
import { outsideRequests } from '../../src/outside-requests.js';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';

export interface SmtpEmailTransportOptions {
  /**
   * smtp://user:pass@host:587 (STARTTLS, required) or smtps://... (TLS from the start). Only a relay on
   * this machine (localhost, 127.0.0.1, [::1]) may be spoken to without TLS.
   */
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
      // nodemailer's default is STARTTLS when the server offers it: anyone on the way can strip the
      // offer and read the password, the codes and the reset links in clear. A server that does not
      // offer it is refused instead, unless it is a relay on this machine.
      requireTLS: !sameMachine(options.url),
      pool: true,
      maxConnections: 5,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  }

  async send(message: OutgoingMessage): Promise<void> {
    // The pool's connections are opened by sends, but must not keep the requests that sent them.
    await outsideRequests(() =>
      this.#mailer.sendMail({
        from: this.options.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
      }),
    );
  }

  close(): void {
    this.#mailer.close();
  }
}

const loopbackHosts = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether the SMTP server is a relay on this machine: mail to it never crosses a network. */
function sameMachine(url: string): boolean {
  const hostname = URL.parse(url)?.hostname;
  return hostname !== undefined && loopbackHosts.has(hostname.toLowerCase());
}
