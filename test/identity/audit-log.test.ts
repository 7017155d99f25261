import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { auditEventTypes, listAuditEvents, writeAuditEvent } from '../../src/identity/audit/audit-log.js';
import { createTestDatabase } from '../support/database.js';
import { createTestUser } from '../support/fixtures.js';

let database: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

describe('audit log', () => {
  it('keeps an event with its IP, user agent and details, latest first', async () => {
    const { db } = database;
    const user = await createTestUser(db);
    const at = new Date('2026-11-24T10:00:00Z');
    await writeAuditEvent(
      db,
      {
        type: auditEventTypes.loginFailed,
        userId: user.id,
        ip: '203.0.113.7',
        userAgent: 'Mozilla/5.0 (test)',
        details: { identifier: user.email, method: 'password' },
      },
      at,
    );
    await writeAuditEvent(
      db,
      { type: auditEventTypes.loginSucceeded, userId: user.id },
      new Date(at.getTime() + 1000),
    );

    const events = await listAuditEvents(db, { userId: user.id });
    expect(events.map((event) => event.type)).toEqual(['identity.login.succeeded', 'identity.login.failed']);
    expect(events[1]).toMatchObject({
      userId: user.id,
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0 (test)',
      details: { identifier: user.email, method: 'password' },
      createdAt: at,
    });
    expect(events[0]!.details).toEqual({});
  });

  it('records events about no account (unknown identifiers) and survives the account being deleted', async () => {
    const { db } = database;
    const user = await createTestUser(db);
    await writeAuditEvent(
      db,
      { type: auditEventTypes.loginFailed, details: { identifier: 'nobody@example.com' } },
      new Date(),
    );
    await writeAuditEvent(db, { type: auditEventTypes.passwordChanged, userId: user.id }, new Date());
    await db('users').where({ id: user.id }).delete();
    expect(await listAuditEvents(db, { userId: user.id })).toHaveLength(1);
    const anonymous = await listAuditEvents(db, { type: auditEventTypes.loginFailed });
    expect(
      anonymous.some((event) => event.userId === null && event.details.identifier === 'nobody@example.com'),
    ).toBe(true);
  });

  it('is written with the change it belongs to: a rolled-back transaction leaves no event', async () => {
    const { db } = database;
    const user = await createTestUser(db);
    await expect(
      db.transaction(async (trx) => {
        await writeAuditEvent(trx, { type: auditEventTypes.passwordReset, userId: user.id }, new Date());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await listAuditEvents(db, { userId: user.id })).toEqual([]);
  });
});
