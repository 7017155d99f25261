import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { saveFieldDefinition } from '../../src/identity/profile-fields/field-definitions.js';
import { readProfileValues } from '../../src/identity/profile-fields/profile-values.js';
import { uniqueEmail } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
  const { db } = service.service;
  const now = new Date();
  await replaceFunnel(
    db,
    'registration',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
      { stepId: 'profile', mandatory: true, order: 30 },
      { stepId: 'password', mandatory: true, order: 40 },
    ],
    now,
  );
  await saveFieldDefinition(
    db,
    { key: 'last-name', title: 'Last name', type: 'text', required: true, order: 20 },
    now,
  );
  await saveFieldDefinition(
    db,
    { key: 'first-name', title: 'First name', type: 'text', required: true, order: 10 },
    now,
  );
  await saveFieldDefinition(
    db,
    { key: 'inn', title: 'INN', type: 'text', validation: { pattern: '\\d{10}|\\d{12}' }, order: 30 },
    now,
  );
  await saveFieldDefinition(
    db,
    { key: 'birthdate', title: 'Birth date', type: 'date', validation: { min: '1900-01-01' }, order: 40 },
    now,
  );
  await saveFieldDefinition(
    db,
    {
      key: 'gender',
      title: 'Gender',
      type: 'select',
      validation: {
        options: [
          { value: 'f', label: 'Female' },
          { value: 'm', label: 'Male' },
        ],
      },
      order: 50,
    },
    now,
  );
  await saveFieldDefinition(
    db,
    { key: 'old-field', title: 'Gone', type: 'text', required: true, isActive: false },
    now,
  );
});
afterAll(() => service?.close());

/** A registration up to the profile step (contact proven by its code). */
async function registerUpToProfile(ip = randomIp()) {
  const email = uniqueEmail('profile');
  const started = await client.start('registration', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier: email }, { ip });
  const code = service.service.developmentMessages.latestTo(email)!.code;
  const verified = await client.pass(identified.sessionId, 'otp-code', { code }, { ip });
  return { ...verified, ip, email };
}

describe('registration profile fields (user_field_definitions)', () => {
  it('shows the active fields in their order, with types, required flags and options', async () => {
    const atProfile = await registerUpToProfile();
    expect(atProfile.nextStep).toBe('profile');
    const screen = atProfile.screen[0] as { stepId: string; fields: Record<string, unknown>[] };
    expect(screen.stepId).toBe('profile');
    expect(screen.fields.map((field) => field.name)).toEqual([
      'first-name',
      'last-name',
      'inn',
      'birthdate',
      'gender',
    ]);
    expect(screen.fields[0]).toMatchObject({ type: 'text', label: 'First name', required: true });
    expect(screen.fields[3]).toMatchObject({ type: 'date', required: false });
    expect(screen.fields[4]).toMatchObject({
      type: 'select',
      options: [
        { value: 'f', label: 'Female' },
        { value: 'm', label: 'Male' },
      ],
    });
  });

  it('validates on the server, one problem per field, and keeps the flow at the profile step', async () => {
    const { sessionId, ip } = await registerUpToProfile();
    const refused = await client.step(
      sessionId,
      'profile',
      { 'last-name': 'Ivanova', inn: '12345', birthdate: '1850-02-30', gender: 'x', nickname: 'zed' },
      { ip },
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_profile' });
    const problems = (refused.body.details as { fields: { field: string }[] }).fields.map(
      (item) => item.field,
    );
    expect(problems.sort()).toEqual(['birthdate', 'first-name', 'gender', 'inn', 'nickname'].sort());
  });

  it('stores the answers with the new account; empty optional fields are left out', async () => {
    const { sessionId, ip } = await registerUpToProfile();
    const profiled = await client.pass(
      sessionId,
      'profile',
      {
        'first-name': ' Anna ',
        'last-name': 'Ivanova',
        inn: '500100732259',
        birthdate: '1990-05-17',
        gender: '',
      },
      { ip },
    );
    expect(profiled.nextStep).toBe('password');
    const done = await client.step(
      profiled.sessionId,
      'password',
      { password: 'a fine long passphrase' },
      { ip },
    );
    const signedIn = loginFrom(done);
    expect(await readProfileValues(service.service.db, signedIn.userId)).toEqual({
      'first-name': 'Anna',
      'last-name': 'Ivanova',
      inn: '500100732259',
      birthdate: '1990-05-17',
    });
  });

  it('refuses to create an account without the profile step while fields are required', async () => {
    const { db } = service.service;
    await replaceFunnel(
      db,
      'registration',
      [
        { stepId: 'phone-email', mandatory: true, order: 10 },
        { stepId: 'otp-code', mandatory: true, order: 20 },
        { stepId: 'password', mandatory: true, order: 40 },
      ],
      new Date(),
    );
    const { sessionId, ip, email } = await registerUpToProfile();
    const done = await client.step(sessionId, 'password', { password: 'a fine long passphrase' }, { ip });
    expect(done.status).toBe(400);
    expect(done.body).toMatchObject({ error: 'profile_required' });
    expect(await db('users').where({ email })).toHaveLength(0);
  });

  it('refuses a definition that is not valid before it reaches the table', async () => {
    const { db } = service.service;
    await expect(
      saveFieldDefinition(db, { key: 'Bad Key', title: 'x', type: 'text' }, new Date()),
    ).rejects.toThrow();
    await expect(
      saveFieldDefinition(db, { key: 'choice', title: 'Choice', type: 'select' }, new Date()),
    ).rejects.toThrow(/options/);
    await expect(
      saveFieldDefinition(
        db,
        { key: 'code', title: 'Code', type: 'text', validation: { pattern: '(' } },
        new Date(),
      ),
    ).rejects.toThrow(/regular expression/);
    // Nested repetition: one almost-matching value would hold the process for seconds.
    await expect(
      saveFieldDefinition(
        db,
        { key: 'code', title: 'Code', type: 'text', validation: { pattern: '(a+)+$' } },
        new Date(),
      ),
    ).rejects.toThrow(/nest repetition/);
    expect(await db('user_field_definitions').whereIn('key', ['choice', 'code'])).toHaveLength(0);
  });
});
