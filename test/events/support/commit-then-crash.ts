// Child process of the outbox crash test: commits changes with their events, then dies at once
// (SIGKILL: no relay ran, nothing was flushed or closed), as a node crashing right after commit would.
import { systemClock } from '../../../src/clock.js';
import { openDatabase } from '../../../src/db/database.js';
import { Outbox } from '../../../src/events/outbox/outbox.js';
import { platformEvents } from '../../../src/platform/events/platform-events.js';

const [databaseUrl, count] = process.argv.slice(2);
const { db } = await openDatabase({ databaseUrl: databaseUrl! });
const outbox = new Outbox({
  db,
  catalog: platformEvents,
  producer: 'platform',
  clock: systemClock,
  notifyOnCommit: true,
  afterCommit: () => {},
});
for (let index = 0; index < Number(count); index += 1) {
  await outbox.transaction(async (trx, emit) => {
    await trx('platform_feature_flags').insert({ key: `crash.flag_${index}`, version: 1 });
    await emit(
      'platform.feature_flag.changed',
      { flagKey: `crash.flag_${index}`, action: 'created', version: 1 },
      `flag:${index}`,
    );
  });
}
process.stdout.write('committed\n');
process.kill(process.pid, 'SIGKILL');
