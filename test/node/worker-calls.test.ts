// Calls to a worker are typed by the operation they name (src/worker/ops/index.ts): a wrong name,
// a wrong argument or a wrong use of the answer fails `make typecheck`. Each @ts-expect-error
// below is such a mistake; tsc fails if one of them stops being an error. At run time the call
// reaches the worker's table under the same name.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { OPS, type OpArgs, type OpResult, type WorkerCall } from '../../src/worker/ops/index.ts';

/** Type-checks the calls without running them (the function is never called). */
export function typedCalls(call: WorkerCall): void {
  void call(0, 'rules.remove', { id: 'r1' });
  // @ts-expect-error: rules.remove takes { id }, not { ruleId }
  void call(0, 'rules.remove', { ruleId: 'r1' });
  // @ts-expect-error: there is no operation rules.delete
  void call(0, 'rules.delete', { id: 'r1' });
  // @ts-expect-error: logTopics.install takes a list of topics
  void call(0, 'logTopics.install', { topics: 'all' });
  void call(0, 'cluster.adopt', { sessions: [] }).then((ids) => {
    // @ts-expect-error: cluster.adopt answers the client ids adopted
    const n: number = ids;
    return n;
  });
  // An operation that takes nothing may be called without an argument.
  void call(0, 'endpoints.runtime');
}

test('the types name the table the worker runs', () => {
  const adopted: OpResult<'cluster.adopt'> = ['dev-1'];
  const args: OpArgs<'rules.remove'> = { id: 'r1' };
  assert.deepEqual(adopted, ['dev-1']);
  assert.equal(args.id, 'r1');
  for (const name of ['rules.remove', 'logTopics.install', 'cluster.adopt', 'endpoints.runtime', 'taps.set', 'log.setLevel', 'system.resources']) {
    assert.equal(typeof (OPS as Record<string, unknown>)[name], 'function', name);
  }
});
