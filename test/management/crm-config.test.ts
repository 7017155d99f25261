import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('management configuration', () => {
  it('has defaults that need nothing: consumer on, no crm snapshots, the management stream', () => {
    expect(loadConfig({}).crm).toEqual({
      baseUrl: undefined,
      clientId: undefined,
      clientSecret: undefined,
      consumer: true,
      stream: 'MANAGEMENT_EVENTS',
      durableName: 'management',
    });
  });

  it('needs the client of the crm reads with CRM_BASE_URL, and never shows its secret', () => {
    expect(() => loadConfig({ CRM_BASE_URL: 'https://crm.example.com' })).toThrow(ConfigError);
    expect(() =>
      loadConfig({ CRM_BASE_URL: 'ftp://crm.example.com', CRM_CLIENT_ID: 'm', CRM_CLIENT_SECRET: 's' }),
    ).toThrow(/CRM_BASE_URL/);
    const config = loadConfig({
      CRM_BASE_URL: 'https://crm.example.com/',
      CRM_CLIENT_ID: 'management',
      CRM_CLIENT_SECRET: 'secret-value',
      CRM_CONSUMER: 'false',
    });
    expect(config.crm).toMatchObject({ baseUrl: 'https://crm.example.com', consumer: false });
    expect(() =>
      loadConfig({ CRM_BASE_URL: 'https://crm.example.com', CRM_CLIENT_SECRET: 'secret-value' }),
    ).toThrow(
      /^Invalid configuration: CRM_CLIENT_ID and CRM_CLIENT_SECRET are required when CRM_BASE_URL is set$/,
    );
    expect(() => loadConfig({ NATS_MANAGEMENT_STREAM: 'has space' })).toThrow(/NATS_MANAGEMENT_STREAM/);
  });
});
