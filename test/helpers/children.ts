// Child processes a test file starts (brokers, Mosquitto, nats-server) end with the file's
// process, whatever way it ends: a test that fails before its `finally` must not leave a server
// running after the suite, nor keep its file's process from exiting (the runner would wait for it).
import type { ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();

process.once('exit', () => {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

/** Kills `child` when this process exits, if it is still running then. */
export function ownChild<C extends ChildProcess>(child: C): C {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}
