import { afterAll, beforeAll, describe, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { proveSingleUseUnderParallelExchanges } from './support/sso-code.js';

// PostgreSQL only (runs when DATABASE_URL is set): real concurrent transactions on the code's row.
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

describe('inbound-SSO code exchange on PostgreSQL', () => {
  it('gives tokens once when the same code is exchanged by many requests at once', async () => {
    await proveSingleUseUnderParallelExchanges(service, 16);
  });
});
