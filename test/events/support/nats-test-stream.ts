import crypto from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

/** Set on CI and on this machine; a newcomer without NATS runs everything else. */
export const natsUrl = process.env.NATS_URL;

/** Service environment for EVENT_BUS=nats with a stream and subjects of its own (parallel runs don't meet). */
export function uniqueNatsEnvironment(url = natsUrl!) {
  const id = crypto.randomBytes(5).toString('hex');
  return {
    EVENT_BUS: 'nats',
    NATS_URL: url,
    NATS_STREAM: `PLATFORM_EVENTS_TEST_${id}`,
    NATS_SUBJECT_PREFIX: `test_${id}.`,
    // The stream management's crm consumer reads (created by the service when missing).
    NATS_MANAGEMENT_STREAM: `MANAGEMENT_EVENTS_TEST_${id}`,
  };
}

export interface StoredEvent {
  seq: number;
  subject: string;
  messageIdHeader: string | undefined;
  body: unknown;
}

/** Everything the stream holds, in stream order. */
export async function readStream(stream: string): Promise<StoredEvent[]> {
  const connection = await connect({ servers: natsUrl! });
  try {
    const manager = await jetstreamManager(connection);
    const info = await manager.streams.info(stream);
    const events: StoredEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
      const message = await manager.streams.getMessage(stream, { seq });
      if (!message) continue;
      events.push({
        seq,
        subject: message.subject,
        messageIdHeader: message.header.get('Nats-Msg-Id') || undefined,
        body: message.json(),
      });
    }
    return events;
  } finally {
    await connection.close();
  }
}

export async function deleteStream(stream: string): Promise<void> {
  const connection = await connect({ servers: natsUrl! });
  try {
    const manager = await jetstreamManager(connection);
    await manager.streams.delete(stream).catch(() => false);
  } finally {
    await connection.close();
  }
}
