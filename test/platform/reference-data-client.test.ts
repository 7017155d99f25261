import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ReferenceDataClient,
  type ReferenceDataChange,
} from '../../src/platform/client/reference-data-client.js';
import { serviceTokenProvider } from '../../src/platform/client/service-token-provider.js';
import { eventually } from '../events/support/eventually.js';
import { createServiceClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { userTokenWith } from './support/platform-tokens.js';

const uniqueKey = (label = 'subject') => `${label}_${crypto.randomBytes(4).toString('hex')}`;

async function readerCredentials(svc: TestService) {
  const { client, clientSecret } = await createServiceClient(svc.service.db, [
    'service:platform.reference-data.read',
  ]);
  return { clientId: client.clientId, clientSecret: clientSecret! };
}

describe('the reference-data client, in the same process (embedded bus)', () => {
  let svc: TestService;
  let admin: string;
  let client: ReferenceDataClient;
  const changes: ReferenceDataChange[] = [];

  beforeAll(async () => {
    svc = await startTestService();
    admin = await userTokenWith(svc, ['platform.reference-data.manage']);
    const credentials = await readerCredentials(svc);
    client = new ReferenceDataClient({
      baseUrl: svc.issuer,
      accessToken: serviceTokenProvider({
        issuer: svc.issuer,
        ...credentials,
        scope: 'service:platform.reference-data.read',
      }),
      events: svc.service.events.bus,
    });
    client.onChange((change) => changes.push(change));
    await client.start();
  });
  afterAll(async () => {
    client?.close();
    await svc?.close();
  });

  it('loads every entity at start', () => {
    expect(client.list('level').map((level) => level.key)).toEqual([
      'beginner',
      'basic',
      'advanced',
      'olympiad',
      'pro',
    ]);
    expect(client.get('grade_range', 'g9-11')).toMatchObject({ min_grade: 9, max_grade: 11 });
    expect(client.list('format')).toHaveLength(7);
  });

  it('refreshes an entity when its change event arrives', async () => {
    const key = uniqueKey();
    await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Statistics' } },
    });
    await eventually(() => expect(client.get('subject', key)?.title).toEqual({ en: 'Statistics' }));

    await platformRequest(svc, 'PATCH', '/reference/subjects/' + key, {
      token: admin,
      body: { is_active: false },
    });
    await eventually(() => expect(client.get('subject', key)?.is_active).toBe(false));
    expect(client.list('subject', { activeOnly: true }).some((subject) => subject.key === key)).toBe(false);
    expect(changes.filter((change) => change.reason === 'event').map((change) => change.entity)).toContain(
      'subject',
    );
  });

  it('ignores a re-delivered event (same messageId)', async () => {
    const key = uniqueKey();
    await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Ethics' } },
    });
    const row = await svc.service.db('event_outbox').orderBy('id', 'desc').first();
    await eventually(() =>
      expect(changes.some((change) => change.messageId === row.envelope.messageId)).toBe(true),
    );

    await svc.service.events.bus.publish(row.envelope);
    await svc.service.events.bus.publish(row.envelope);
    // A fresh event after the duplicates: once it is handled, the duplicates would have been too.
    await platformRequest(svc, 'PATCH', '/reference/levels/pro', {
      token: admin,
      body: { display_order: 51 },
    });
    await eventually(() => expect(client.get('level', 'pro')?.display_order).toBe(51));
    expect(changes.filter((change) => change.messageId === row.envelope.messageId)).toHaveLength(1);
  });
});
