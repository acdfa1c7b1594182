// Where the store tests find their databases (scripts/ensure-databases.sh sets them up; override
// with SPINDLE_TEST_PG_URL / SPINDLE_TEST_MYSQL_URL), and a unique name per test so reruns and
// parallel runs never see each other's data.
import { randomBytes } from 'node:crypto';

export const PG_URL = process.env.SPINDLE_TEST_PG_URL || 'postgres://spindle:spindle@127.0.0.1:5432/spindle_test';
export const MYSQL_URL = process.env.SPINDLE_TEST_MYSQL_URL || 'mysql://spindle:spindle@127.0.0.1:3306/spindle_test';

export const SETUP_HINT = 'run scripts/ensure-databases.sh (or `make databases`) to install and start the test databases';

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** Rethrows a connection failure with the hint naming the setup script. */
export function withHint(err: unknown, url: string): Error {
  return new Error(`cannot use the test database at ${url.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error)?.message ?? String(err)}; ${SETUP_HINT}`, { cause: err });
}
