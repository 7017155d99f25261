// A domain service in a process of its own: the reference-data client fed by NATS JetStream. It prints
// one JSON line per cache change, which the test reads (the cache as this process sees it).
import { NatsJetStreamBus } from '../../../adapters/event-bus/nats-jetstream-bus.js';
import { createLogger } from '../../../src/logger.js';
import { ReferenceDataClient } from '../../../src/platform/client/reference-data-client.js';
import { serviceTokenProvider } from '../../../src/platform/client/service-token-provider.js';

const [issuer, clientId, clientSecret, natsUrl, stream, subjectPrefix] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const bus = new NatsJetStreamBus({
  url: natsUrl,
  stream,
  subjectPrefix,
  logger,
  name: 'reference-client-test',
});
const client = new ReferenceDataClient({
  baseUrl: issuer,
  accessToken: serviceTokenProvider({
    issuer,
    clientId,
    clientSecret,
    scope: 'service:platform.reference-data.read',
  }),
  events: bus,
  logger,
  retryDelayMs: 100,
});

const snapshot = () => ({
  subjects: Object.fromEntries(client.list('subject').map((entry) => [entry.key, entry.title.en ?? null])),
});
client.onChange((change) =>
  process.stdout.write(`${JSON.stringify({ type: 'changed', ...change, ...snapshot() })}\n`),
);
bus.onReconnect(() => process.stdout.write(`${JSON.stringify({ type: 'reconnected' })}\n`));
await client.start();
process.stdout.write(`${JSON.stringify({ type: 'ready', ...snapshot() })}\n`);

process.on('SIGTERM', () => {
  client.close();
  void bus.close().then(() => process.exit(0));
});
