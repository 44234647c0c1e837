import assert from 'node:assert/strict';
import { identityHost, readModelSharing, type SharingFacts } from '../../domain/read-model-sharing';

const facts = (over: Partial<SharingFacts>): SharingFacts => ({
  database: 'sqlite',
  temporalAddress: '127.0.0.1:7233',
  thisHost: 'api-1',
  pollerIdentities: [],
  taskQueue: 'intent-service',
  ...over,
});

describe('domain/read-model-sharing: a process never splits the read model across hosts', () => {
  it('when the read model is SQLite and another host polls the task queue, then the process refuses to start, naming the hosts and DATABASE_URL', () => {
    const v = readModelSharing(facts({ pollerIdentities: ['41@api-1', '7@worker-2', '9@worker-2', 'worker intent.b1', '3@worker-3'] }));
    assert.equal(v.verdict, 'refuse');
    assert.match(v.verdict === 'refuse' ? v.message : '', /polled from worker-2, worker-3: .*DATABASE_URL/);
  });

  it('when the read model is PostgreSQL, then any number of hosts is fine', () => {
    assert.deepEqual(
      readModelSharing(facts({ database: 'postgres', pollerIdentities: ['7@worker-2'], temporalAddress: 'temporal:7233' })),
      {
        verdict: 'ok',
      },
    );
  });

  it('when the read model is SQLite, no other host polls yet, and Temporal is elsewhere, then it warns (it cannot tell); on loopback it is quiet', () => {
    assert.equal(readModelSharing(facts({ temporalAddress: 'temporal.internal:7233' })).verdict, 'warn');
    for (const address of ['127.0.0.1:7233', 'localhost:7233', '[::1]:7233'])
      assert.equal(readModelSharing(facts({ temporalAddress: address })).verdict, 'ok');
  });

  it('when an identity is not of the SDK default form pid@host, then it names no host', () => {
    assert.equal(identityHost('12@host-a'), 'host-a');
    assert.equal(identityHost('worker intent.build-1'), undefined);
    assert.equal(identityHost('x@host'), undefined);
  });
});
