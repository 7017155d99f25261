// npm run crm-sim -- [options]: a simulated crm for demos, local development and the benchmark. It
// publishes a reproducible history (seeded) with the delivery chaos asked for, and serves the three
// snapshot endpoints from what it has published. See docs/management.md, "The crm simulator".
import http from 'node:http';
import { parseArgs } from 'node:util';
import { NatsJetStreamBus } from '../../../adapters/event-bus/nats-jetstream-bus.js';
import { holdDataDirectory } from '../../cli/control-channel.js';
import { runCommand } from '../../cli/run-command.js';
import { systemClock } from '../../clock.js';
import { loadMainConfig } from '../../config.js';
import { openDatabase } from '../../db/database.js';
import { migrateToLatest } from '../../db/migrate.js';
import type { Envelope } from '../../events/envelope.js';
import { createLogger } from '../../logger.js';
import { createClient } from '../../oidc/models/oauth-client.js';
import { createIdentityService } from '../../service.js';
import { crmEventSchemas, isCrmMessageType } from '../crm-contract/crm-events.js';
import type { CrmEnvelope } from '../crm-contract/crm-envelope.js';
import { managementStreamSubjects } from '../ingestion/durable-crm-source.js';
import { chaoticDelivery } from './crm-delivery.js';
import { crmSnapshotServer } from './crm-snapshot-server.js';
import { CrmState } from './crm-state.js';
import { generateCrmHistory } from './crm-world.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    start: { type: 'string', default: '2026-01-01' },
    days: { type: 'string', default: '90' },
    'leads-per-day': { type: 'string', default: '20' },
    copies: { type: 'string', default: '1' },
    shuffle: { type: 'boolean', default: false },
    poison: { type: 'string', default: '0' },
    rate: { type: 'string', default: '0' },
    port: { type: 'string', default: '3100' },
    embedded: { type: 'boolean', default: false },
    exit: { type: 'boolean', default: false },
  },
  strict: true,
});
const number = (name: keyof typeof values) => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a non-negative number`);
  return value;
};

const logger = createLogger(process.env.LOG_LEVEL ?? 'info');
const history = generateCrmHistory({
  seed: number('seed'),
  start: String(values.start),
  days: number('days'),
  leadsPerDay: number('leads-per-day'),
});
const poison = number('poison');
const delivery = chaoticDelivery(history, {
  seed: number('seed') + 1,
  copies: Math.max(1, number('copies')),
  shuffle: Boolean(values.shuffle),
  unknownStatuses: poison,
  missingIds: poison,
  paymentPii: poison,
  malformed: poison,
});
const published = new CrmState();
const snapshotPort = number('port');

/**
 * --embedded: the identity service in this same process, its crm consumer on the embedded bus. On PGlite
 * it holds DATA_DIR as `npm start` does: the control socket keeps a second process off the data
 * directory and answers the CLI's commands (`npm run idp -- users:create ...`) on this database.
 */
async function startEmbeddedService(snapshotUrl: string) {
  const base = loadMainConfig();
  const channel = await holdDataDirectory(base);
  const database = await openDatabase({
    databaseUrl: base.databaseUrl,
    pgliteDataDir: `${base.dataDir}/pgdata`,
  });
  await migrateToLatest(database.db);
  const { client, clientSecret } = await createClient(database.db, {
    name: 'management (crm simulator)',
    type: 'confidential',
    grantTypes: ['client_credentials'],
    scopes: ['service:crm.aggregates.read', 'service:crm.teacher_payouts.read'],
  });
  const config = loadMainConfig({
    ...process.env,
    EVENT_BUS: 'embedded',
    CRM_BASE_URL: snapshotUrl,
    CRM_CLIENT_ID: client.clientId,
    CRM_CLIENT_SECRET: clientSecret,
  });
  const service = await createIdentityService({ config, database, logger, backgroundJobs: true });
  channel?.serve((argv, invokedAs) =>
    runCommand(argv, async () => ({ db: database.db, clock: systemClock }), invokedAs),
  );
  const server = http.createServer(service.app.callback());
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  logger.info({ issuer: config.issuer }, 'identity service (embedded) listening');
  const close = async () => {
    server.close();
    server.closeAllConnections();
    await channel?.close();
    await service.close();
    await database.close();
  };
  // The embedded bus carries objects: a text that is not JSON can't travel on it.
  const publishObject = async (text: string) => {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    await service.events.bus.publish(message as Envelope);
  };
  return { config, publish: publishObject, close };
}

const snapshotUrl = `http://127.0.0.1:${snapshotPort}`;
const embedded = values.embedded ? await startEmbeddedService(snapshotUrl) : undefined;
const config = embedded?.config ?? loadMainConfig();
let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  await embedded?.close();
  process.exit(code);
};
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

const snapshots = crmSnapshotServer({
  issuer: config.issuer,
  audience: config.apiAudience,
  state: () => published,
});
const snapshotServer = http.createServer(snapshots.app.callback());
await new Promise<void>((resolve) => snapshotServer.listen(snapshotPort, '127.0.0.1', resolve));
logger.info({ url: snapshotUrl, issuer: config.issuer }, 'crm snapshot endpoints listening');

let publish: (text: string) => Promise<void>;
let nats: NatsJetStreamBus | undefined;
if (embedded) {
  publish = embedded.publish;
} else if (config.eventBus === 'nats') {
  nats = new NatsJetStreamBus({
    url: config.nats.url,
    stream: config.nats.stream,
    subjectPrefix: config.nats.subjectPrefix,
    logger,
    name: 'crm-simulator',
  });
  await nats.ensureStream(
    config.crm.stream,
    managementStreamSubjects.map((subject) => nats!.subjectOf(subject)),
  );
  // No Nats-Msg-Id: copies reach the consumer, whose de-duplication is what is being shown.
  publish = (text) => nats!.publishMessage(messageTypeOf(text), text);
} else {
  logger.warn('EVENT_BUS is not nats and --embedded is not set: events are not published, only served');
  publish = async () => {};
}

function messageTypeOf(text: string): string {
  try {
    const type = (JSON.parse(text) as { messageType?: unknown }).messageType;
    return typeof type === 'string' && /^crm\.[a-z_.]+$/.test(type) ? type : 'crm.unparseable';
  } catch {
    return 'crm.unparseable';
  }
}

const rate = number('rate');
const started = Date.now();
for (const [index, text] of delivery.texts.entries()) {
  await publish(text);
  try {
    const message = JSON.parse(text) as CrmEnvelope;
    if (
      isCrmMessageType(message.messageType) &&
      crmEventSchemas[message.messageType].safeParse(message).success
    ) {
      published.apply(message);
    }
  } catch {
    // broken JSON on purpose: crm's records don't change
  }
  if (rate > 0) {
    const due = started + ((index + 1) * 1000) / rate;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
  }
}
await nats?.close();
const end = new Date(Date.parse(`${values.start}T00:00:00Z`) + number('days') * 86_400_000);
const period = { from: String(values.start), to: end.toISOString().slice(0, 10) };
// The page opens on the current month; the simulated history is elsewhere in time: this URL shows it.
const dashboards = embedded
  ? `${config.issuer}/en/management/dashboards?from=${period.from}&to=${period.to}`
  : undefined;
process.stdout.write(
  `${JSON.stringify(
    {
      history: history.length,
      published: delivery.texts.length,
      deadLetters: delivery.deadLetterIds.length,
      rejected: delivery.rejected,
      seconds: (Date.now() - started) / 1000,
      snapshots: snapshotUrl,
      dashboards,
      groundTruth: {
        sales: published.sales(period, new Date()),
        balance: published.balance(new Date()),
      },
    },
    null,
    2,
  )}\n`,
);
if (values.exit) await stop(0);
if (dashboards) {
  logger.info(
    { dashboards },
    `history published; dashboards of the simulated period: ${dashboards} (sign in as a user holding management.dashboards.read.finance, e.g. one made now with \`npm run idp -- users:create ... --role super_admin\`); Ctrl-C to stop`,
  );
} else {
  logger.info('history published; still serving the snapshots (Ctrl-C to stop)');
}
