import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpEmailTransport } from '../../adapters/transports/smtp-email-transport.js';
import {
  signatureHeader,
  timestampHeader,
  WebhookSmsTransport,
} from '../../adapters/transports/webhook-sms-transport.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ApiError } from '../../src/http/api-error.js';
import { DevelopmentTransport } from '../../src/identity/transports/development-transport.js';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';
import { TransportRegistry } from '../../src/identity/transports/transport-registry.js';
import { uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { expectCollected } from '../support/garbage-collection.js';
import { startTestService, type TestService } from '../support/test-service.js';

interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives (no TLS, no auth). */
/**
 * A local SMTP server without TLS. On `host` 127.0.0.1 it is a relay on this machine; on 127.0.0.2
 * (loopback too, but not what an operator writes for one) it stands for a server across a network.
 * `logins` records the user names that reached it by AUTH.
 */
async function startSmtpServer(host = '127.0.0.1') {
  const received: ReceivedMail[] = [];
  const logins: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    onAuth(auth, _session, callback) {
      logins.push(String(auth.username));
      callback(null, { user: auth.username });
    },
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((address) => address.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://${host}:${port}`,
    port,
    received,
    logins,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface GatewayRequest {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** The "SMS gateway": a local HTTP server recording the webhook calls, answering `status`. */
async function startGateway() {
  const requests: GatewayRequest[] = [];
  let status = 200;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.statusCode = status;
      response.end(status === 200 ? '{"ok":true}' : 'gateway error');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sms`,
    requests,
    answer(code: number) {
      status = code;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Three sends, each as a request makes it (in an async context holding the request, as the engine's
 * ctx): all three requests must be collected within `withinMs`, while the transport keeps the
 * connections they opened for its next messages.
 */
async function expectSendersCollected(send: () => Promise<void>, withinMs: number) {
  const requestContext = new AsyncLocalStorage<object>();
  const requests: WeakRef<object>[] = [];
  await Promise.all(
    Array.from({ length: 3 }, () => {
      const request = {};
      requests.push(new WeakRef(request));
      return requestContext.run(request, send);
    }),
  );
  await expectCollected(requests, withinMs);
}

const message = (channel: 'email' | 'sms', to: string): OutgoingMessage => ({
  channel,
  to,
  subject: 'Your sign-in code',
  text: 'Your sign-in code is 123456.',
  code: '123456',
});

describe('transport registry', () => {
  it('routes each message to a transport of its channel; a named one when the user chose it', async () => {
    const delivered: string[] = [];
    const recorder = (name: string, channels: ('email' | 'sms')[]): Transport => ({
      name,
      label: name,
      channels,
      async send(outgoing) {
        delivered.push(`${name}:${outgoing.to}`);
      },
    });
    const registry = new TransportRegistry()
      .register(recorder('mailer', ['email']))
      .register(recorder('messenger', ['sms', 'email']));

    expect(registry.transportsFor('email').map((choice) => choice.name)).toEqual(['mailer', 'messenger']);
    expect(await registry.send(message('email', 'a@example.com'))).toBe('mailer');
    expect(await registry.send(message('email', 'b@example.com'), 'messenger')).toBe('messenger');
    expect(await registry.send(message('sms', '+15550000001'))).toBe('messenger');
    expect(delivered).toEqual(['mailer:a@example.com', 'messenger:b@example.com', 'messenger:+15550000001']);
    expect(() => registry.register(recorder('mailer', ['email']))).toThrow(/already registered/);
  });

  it('refuses a channel nobody delivers and an unknown transport with a 400 the user can act on', async () => {
    const registry = new TransportRegistry().register(new DevelopmentTransport(['email']));
    await expect(registry.send(message('sms', '+15550000002'))).rejects.toMatchObject({
      status: 400,
      code: 'channel_not_supported',
    });
    await expect(registry.send(message('email', 'c@example.com'), 'carrier-pigeon')).rejects.toMatchObject({
      status: 400,
      code: 'unknown_transport',
    });
  });

  it('turns a failed delivery into 502 delivery_failed without the cause', async () => {
    const registry = new TransportRegistry().register({
      name: 'broken',
      label: 'Broken',
      channels: ['email'],
      async send() {
        throw new Error('connection refused by smtp.internal:25');
      },
    });
    const failure = await registry.send(message('email', 'd@example.com')).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status: 502, code: 'delivery_failed' });
    expect((failure as ApiError).message).not.toContain('smtp.internal');
  });
});

describe('development transport', () => {
  it('keeps the messages for inspection, latest per recipient', async () => {
    const outbox = new DevelopmentTransport();
    await outbox.send(message('email', 'Dev@Example.com'));
    await outbox.send({ ...message('email', 'dev@example.com'), code: '654321' });
    expect(outbox.latestTo('dev@example.com')?.code).toBe('654321');
    expect(outbox.messagesTo('DEV@example.com')).toHaveLength(2);
    expect(outbox.latestTo('nobody@example.com')).toBeUndefined();
  });
});

describe('SMTP email transport (nodemailer against a local SMTP server)', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  beforeAll(async () => {
    smtp = await startSmtpServer();
  });
  afterAll(() => smtp?.close());

  it('delivers the message with the configured sender', async () => {
    const transport = new SmtpEmailTransport({ url: smtp.url, from: 'Identity <no-reply@id.example.com>' });
    const to = uniqueEmail('smtp');
    await transport.send({
      ...message('email', to),
      text: 'Your sign-in code is 987654. It expires in 10 minutes.',
    });
    transport.close();
    const mail = smtp.received.find((item) => item.to.includes(to));
    expect(mail).toBeDefined();
    expect(mail!.from).toBe('no-reply@id.example.com');
    expect(mail!.raw).toMatch(/^Subject: Your sign-in code/m);
    expect(mail!.raw).toMatch(/^From: Identity <no-reply@id\.example\.com>/m);
    expect(mail!.raw).toContain('987654');
  });

  it('keeps no sender reachable through the pooled connections it opened', async () => {
    const transport = new SmtpEmailTransport({ url: smtp.url, from: 'Identity <no-reply@id.example.com>' });
    try {
      // The pool keeps its connections open for the next messages; they must not keep the requests.
      await expectSendersCollected(() => transport.send(message('email', uniqueEmail('pooled'))), 5_000);
    } finally {
      transport.close();
    }
  });

  it('never sends the password or a message in clear to a server across a network', async () => {
    const remote = await startSmtpServer('127.0.0.2');
    try {
      const transport = new SmtpEmailTransport({
        url: `smtp://mailer:s3cret@127.0.0.2:${remote.port}`,
        from: 'no-reply@example.com',
      });
      const to = uniqueEmail('cleartext');
      await expect(transport.send(message('email', to))).rejects.toThrow(/STARTTLS/);
      transport.close();
      expect(remote.logins).toEqual([]);
      expect(remote.received).toEqual([]);
    } finally {
      await remote.close();
    }
  });

  it('a relay on this machine may be spoken to without TLS, with its password', async () => {
    const transport = new SmtpEmailTransport({
      url: `smtp://mailer:s3cret@127.0.0.1:${smtp.port}`,
      from: 'no-reply@example.com',
    });
    const to = uniqueEmail('relay');
    await transport.send(message('email', to));
    transport.close();
    expect(smtp.logins).toContain('mailer');
    expect(smtp.received.some((mail) => mail.to.includes(to))).toBe(true);
  });

  it('fails (and does not hang) when the server is unreachable', async () => {
    const closed = await startSmtpServer();
    await closed.close();
    const transport = new SmtpEmailTransport({ url: closed.url, from: 'no-reply@example.com' });
    await expect(transport.send(message('email', uniqueEmail()))).rejects.toThrow();
    transport.close();
  });
});

describe('SMS webhook transport (against a local gateway)', () => {
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  const secret = 'webhook-secret-0123456789abcdefghijklmnop';
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway?.close());

  it('POSTs {to, text, code} as JSON with an HMAC-SHA-256 signature the gateway can check', async () => {
    const transport = new WebhookSmsTransport({ url: gateway.url, secret });
    const to = uniquePhone();
    await transport.send(message('sms', to));
    const request = gateway.requests.at(-1)!;
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({ to, text: 'Your sign-in code is 123456.', code: '123456' });
    const timestamp = String(request.headers[timestampHeader]);
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    // What a gateway does: recompute over the raw body and compare in constant time.
    const expected = `sha256=${crypto.createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`;
    const signature = String(request.headers[signatureHeader]);
    expect(crypto.timingSafeEqual(Buffer.from(signature), Buffer.from(expected))).toBe(true);
    const forged = crypto
      .createHmac('sha256', 'another-secret')
      .update(`${timestamp}.${request.body}`)
      .digest('hex');
    expect(signature).not.toBe(`sha256=${forged}`);
  });

  it('keeps no sender reachable through the connections fetch keeps alive', async () => {
    const transport = new WebhookSmsTransport({ url: gateway.url, secret });
    // fetch keeps a connection alive 4 s for the next call; 2 s tells the request's from the pool's.
    await expectSendersCollected(() => transport.send(message('sms', uniquePhone())), 2_000);
  });

  it('treats an answer other than 2xx as a failed delivery', async () => {
    const transport = new WebhookSmsTransport({ url: gateway.url, secret });
    gateway.answer(503);
    await expect(transport.send(message('sms', uniquePhone()))).rejects.toThrow(/503/);
    gateway.answer(200);
  });
});

describe('transport configuration', () => {
  const base = { ISSUER: 'https://id.example.com' };

  it('uses the development transport when nothing is configured outside production', () => {
    const config = loadConfig({ ...base, NODE_ENV: 'development' });
    expect(config).toMatchObject({
      emailTransport: 'development',
      smsTransport: 'development',
      mailFrom: 'Identity <no-reply@id.example.com>',
    });
  });

  it('picks the real transports when their addresses are given', () => {
    const config = loadConfig({
      ...base,
      SMTP_URL: 'smtps://mailer:pw@smtp.example.com:465',
      SMS_WEBHOOK_URL: 'https://sms.example.com/hook',
      SMS_WEBHOOK_SECRET: 'a'.repeat(32),
    });
    expect(config).toMatchObject({ emailTransport: 'smtp', smsTransport: 'webhook' });
  });

  it('names the variable when a transport lacks its settings, without printing secrets', () => {
    expect(() => loadConfig({ ...base, EMAIL_TRANSPORT: 'smtp' })).toThrow(
      new ConfigError('SMTP_URL', 'is required when EMAIL_TRANSPORT=smtp'),
    );
    expect(() =>
      loadConfig({ ...base, SMS_TRANSPORT: 'webhook', SMS_WEBHOOK_URL: 'https://sms.example.com' }),
    ).toThrow(/SMS_WEBHOOK_SECRET is required/);
    const error = (() => {
      try {
        loadConfig({ ...base, SMS_WEBHOOK_SECRET: 'short-secret-value' });
      } catch (caught) {
        return caught as Error;
      }
    })();
    expect(error?.message).toContain('SMS_WEBHOOK_SECRET');
    expect(error?.message).not.toContain('short-secret-value');
  });

  it('refuses the development transport, or no real transport at all, in production', async () => {
    const keys = await import('../../src/keys/development-secrets.js');
    const productionKeys = {
      ...base,
      NODE_ENV: 'production',
      OIDC_PRIVATE_KEY: keys.generateRsaPrivateKeyPem(),
      MAIN_AUTH_PRIVATE_KEY: keys.generateRsaPrivateKeyPem(),
      COOKIE_KEYS: 'k'.repeat(40),
    };
    expect(() => loadConfig(productionKeys)).toThrow(
      /EMAIL_TRANSPORT or SMS_TRANSPORT must name a real transport/,
    );
    expect(() => loadConfig({ ...productionKeys, EMAIL_TRANSPORT: 'development' })).toThrow(
      /EMAIL_TRANSPORT development is not allowed/,
    );
    const config = loadConfig({ ...productionKeys, SMTP_URL: 'smtp://smtp.example.com:587' });
    expect(config).toMatchObject({ emailTransport: 'smtp', smsTransport: 'none' });
  });
});

describe('transports in the running service', () => {
  let service: TestService;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  beforeAll(async () => {
    [smtp, gateway] = await Promise.all([startSmtpServer(), startGateway()]);
    service = await startTestService({
      env: {
        SMTP_URL: smtp.url,
        MAIL_FROM: 'Identity <no-reply@id.example.com>',
        SMS_WEBHOOK_URL: gateway.url,
        SMS_WEBHOOK_SECRET: 'webhook-secret-0123456789abcdefghijklmnop',
      },
    });
  });
  afterAll(async () => {
    await service?.close();
    await Promise.all([smtp?.close(), gateway?.close()]);
  });

  it('sends codes by SMTP and by the SMS webhook when configured (the development outbox stays empty)', async () => {
    const { transports, developmentMessages } = service.service;
    expect(transports.transportsFor('email').map((choice) => choice.name)).toEqual(['smtp']);
    expect(transports.transportsFor('sms').map((choice) => choice.name)).toEqual(['sms-webhook']);
    const email = uniqueEmail('configured');
    const phone = uniquePhone();
    await transports.send(message('email', email));
    await transports.send(message('sms', phone));
    expect(smtp.received.some((mail) => mail.to.includes(email))).toBe(true);
    expect(gateway.requests.some((request) => JSON.parse(request.body).to === phone)).toBe(true);
    expect(developmentMessages.all()).toEqual([]);
  });
});
