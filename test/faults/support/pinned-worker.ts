import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { createTestDatabase } from '../../support/database.js';
import { ServiceProcess } from './service-process.js';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * Requests to one chosen worker of a cluster (HTTP_WORKERS > 1): a keep-alive connection is opened,
 * the kernel gives it to whichever worker accepts first, and `ss` tells which process holds its server
 * end; connections held by another worker are closed and the next one is tried.
 */
export class PinnedWorker {
  private constructor(
    private readonly agent: http.Agent,
    private readonly port: number,
  ) {}

  static async to(port: number, pid: number, attempts = 200): Promise<PinnedWorker> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const pinned = new PinnedWorker(agent, port);
      const { localPort } = await pinned.#send('GET', '/.well-known/openid-configuration', {});
      if (serverPidOf(port, localPort) === pid) return pinned;
      agent.destroy();
    }
    throw new Error(`no connection reached worker ${pid}`);
  }

  request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<Answer> {
    return this.#send(method, path, headers, body).then(({ answer }) => answer);
  }

  close(): void {
    this.agent.destroy();
  }

  #send(method: string, path: string, headers: Record<string, string>, body?: string) {
    return new Promise<{ answer: Answer; localPort: number }>((resolve, reject) => {
      const outgoing = http.request(
        { host: '127.0.0.1', port: this.port, method, path, agent: this.agent, headers, timeout: 10_000 },
        (response) => {
          let text = '';
          const localPort = response.socket.localPort!;
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () =>
            resolve({
              answer: { status: response.statusCode!, headers: response.headers, body: text },
              localPort,
            }),
          );
          response.on('error', reject);
        },
      );
      outgoing.on('timeout', () => outgoing.destroy(new Error('hung')));
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }
}

function serverPidOf(serverPort: number, clientPort: number): number | undefined {
  const out = execFileSync(
    'ss',
    ['-tnpH', 'state', 'established', `( sport = :${serverPort} and dport = :${clientPort} )`],
    {
      encoding: 'utf8',
    },
  );
  const match = /pid=(\d+)/.exec(out);
  return match ? Number(match[1]) : undefined;
}

/**
 * `npm start` with HTTP_WORKERS=2 on a database of its own, and a connection pinned to each worker:
 * what the cluster tests set up to act on one worker and look from the other.
 */
export async function startTwoPinnedWorkers(logLevel: 'info' | 'warn') {
  const database = await createTestDatabase();
  const service = await ServiceProcess.start({
    DATABASE_URL: database.url!,
    HTTP_WORKERS: '2',
    LOG_LEVEL: logLevel,
  });
  while (service.childPids().length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
  const [first, second] = service.childPids();
  const a = await PinnedWorker.to(service.port, first!);
  const b = await PinnedWorker.to(service.port, second!);
  return {
    database,
    service,
    a,
    b,
    async close() {
      a.close();
      b.close();
      await service.kill();
      await database.close();
    },
  };
}

/**
 * A password sign-in through the identity API on that worker (no device cookie: a new device each
 * time): its access token and its refresh cookie (`name=value`).
 */
export async function signInOn(
  worker: PinnedWorker,
  user: { email?: string | null; password: string },
): Promise<{ accessToken: string; refreshCookie: string }> {
  const step = async (path: string, body: unknown) => {
    const answer = await worker.request(
      'POST',
      `/api/v2/identity${path}`,
      { 'content-type': 'application/json' },
      JSON.stringify(body),
    );
    if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}: ${answer.body}`);
    return answer;
  };
  const started = JSON.parse((await step('/auth/flow/start', { flow: 'login' })).body) as {
    sessionId: string;
  };
  const identified = JSON.parse(
    (
      await step('/auth/flow/step', {
        sessionId: started.sessionId,
        step: 'phone-email',
        input: { identifier: user.email },
      })
    ).body,
  ) as { sessionId: string };
  const done = await step('/auth/flow/step', {
    sessionId: identified.sessionId,
    step: 'password',
    input: { password: user.password },
  });
  const cookies = ([] as string[]).concat(done.headers['set-cookie'] ?? []);
  const refresh = cookies.find((cookie) => cookie.startsWith('service_id_refresh_token='));
  if (!refresh) throw new Error('the sign-in set no refresh cookie');
  return {
    accessToken: (JSON.parse(done.body) as { accessToken: string }).accessToken,
    refreshCookie: refresh.split(';')[0]!,
  };
}
