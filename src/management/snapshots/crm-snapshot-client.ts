import type { z } from 'zod';
import {
  balanceAggregateSchema,
  crmSnapshotPaths,
  salesAggregateSchema,
  teacherPayoutsSchema,
  type BalanceAggregate,
  type Period,
  type SalesAggregate,
  type TeacherPayouts,
} from '../crm-contract/crm-snapshots.js';

/** Why a snapshot read failed: crm unreachable or slow, an error status, or an answer off the contract. */
export type SnapshotFailureReason = 'unreachable' | 'timeout' | 'http_error' | 'malformed';

export class SnapshotUnavailable extends Error {
  override name = 'SnapshotUnavailable';
  constructor(
    readonly reason: SnapshotFailureReason,
    message: string,
  ) {
    super(message);
  }
}

export interface CrmSnapshotClientOptions {
  /** Origin of crm's API, e.g. https://crm.example.com. */
  baseUrl: string;
  /** A client-credentials access token with the crm scopes (serviceTokenProvider). */
  accessToken: () => Promise<string>;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * The three crm reads (spec: Sales domain reads used by management), each answer checked against the
 * contract: anything else counts as crm being unavailable.
 */
export class CrmSnapshotClient {
  constructor(private readonly options: CrmSnapshotClientOptions) {}

  sales(period: Period): Promise<SalesAggregate> {
    return this.#get(crmSnapshotPaths.sales, { from: period.from, to: period.to }, salesAggregateSchema);
  }

  balance(): Promise<BalanceAggregate> {
    return this.#get(crmSnapshotPaths.balance, {}, balanceAggregateSchema);
  }

  teacherPayouts(month: string): Promise<TeacherPayouts> {
    return this.#get(crmSnapshotPaths.teacherPayouts, { period: month }, teacherPayoutsSchema);
  }

  async #get<Schema extends z.ZodType>(
    path: string,
    query: Record<string, string>,
    schema: Schema,
  ): Promise<z.infer<Schema>> {
    const url = new URL(path, this.options.baseUrl);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(url, {
        headers: { authorization: `Bearer ${await this.options.accessToken()}`, accept: 'application/json' },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 3000),
      });
    } catch (error) {
      const timedOut =
        error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw new SnapshotUnavailable(
        timedOut ? 'timeout' : 'unreachable',
        `GET ${url.pathname}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new SnapshotUnavailable('http_error', `GET ${url.pathname} answered ${response.status}`);
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw new SnapshotUnavailable('malformed', `GET ${url.pathname} answered something that is not JSON`);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      throw new SnapshotUnavailable(
        'malformed',
        `GET ${url.pathname} answered off the contract (${first?.path.join('.') || 'body'}: ${first?.message})`,
      );
    }
    return parsed.data;
  }
}
