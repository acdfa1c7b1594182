// Owns the command that prints a password hash for the `auth.users` section of the config file:
//   spindle hash-password [--algorithm argon2|bcrypt] [--cost N] [PASSWORD]   (bin/spindle: lib/hash-password.js)
// Without PASSWORD it reads one from stdin (a prompt without echo on a terminal, otherwise the
// whole input minus one trailing newline), so the password stays out of the shell history.
import { pathToFileURL } from 'node:url';

import { DEFAULT_BCRYPT_COST, PASSWORD_ALGORITHMS, hashPassword, type PasswordAlgorithm } from './password.ts';

export const HASH_PASSWORD_USAGE = 'usage: spindle hash-password [--algorithm argon2|bcrypt] [--cost 4..31] [PASSWORD]';

export interface HashPasswordArgs {
  algorithm: PasswordAlgorithm;
  cost: number;
  password: string | undefined;
}

/** Reads the command line; throws an Error carrying the usage text on bad input. */
export function parseHashPasswordArgs(argv: readonly string[]): HashPasswordArgs {
  const args: HashPasswordArgs = { algorithm: 'argon2', cost: DEFAULT_BCRYPT_COST, password: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--algorithm' || arg === '-a') {
      const value = argv[++i];
      if (!(PASSWORD_ALGORITHMS as readonly (string | undefined)[]).includes(value)) throw new Error(`--algorithm must be argon2 or bcrypt\n${HASH_PASSWORD_USAGE}`);
      args.algorithm = value as PasswordAlgorithm;
    } else if (arg === '--cost') {
      const cost = Number(argv[++i]);
      if (!Number.isInteger(cost) || cost < 4 || cost > 31) throw new Error(`--cost must be an integer 4..31\n${HASH_PASSWORD_USAGE}`);
      args.cost = cost;
    } else if (args.password === undefined && !arg.startsWith('-')) {
      args.password = arg;
    } else {
      throw new Error(`unexpected argument ${JSON.stringify(arg)}\n${HASH_PASSWORD_USAGE}`);
    }
  }
  return args;
}

/** The password typed on a terminal, without echo; rejects on Ctrl-C or Ctrl-D. */
function promptWithoutEcho(stdin: NodeJS.ReadStream, prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let typed = '';
    process.stderr.write(prompt);
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    stdin.resume();
    const finish = (err: Error | undefined): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err === undefined) resolve(typed);
      else reject(err);
    };
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish(undefined);
        if (ch === '\u0003' || ch === '\u0004') return finish(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** All of a piped stdin, minus one trailing newline. */
async function readPipedPassword(stdin: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export async function runHashPassword(argv: readonly string[]): Promise<string> {
  const args = parseHashPasswordArgs(argv);
  const password = args.password ?? (process.stdin.isTTY ? await promptWithoutEcho(process.stdin, 'Password: ') : await readPipedPassword(process.stdin));
  if (password === '') throw new Error('the password is empty');
  return hashPassword(password, args.algorithm, args.cost);
}

function isEntryPoint(): boolean {
  return process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
}

if (isEntryPoint() && (process.argv.includes('--help') || process.argv.includes('-h'))) {
  process.stdout.write(HASH_PASSWORD_USAGE + '\n');
} else if (isEntryPoint()) {
  runHashPassword(process.argv.slice(2)).then(
    (hash) => process.stdout.write(hash + '\n'),
    (err: Error) => {
      process.stderr.write(`hash-password: ${err.message}\n`);
      process.exitCode = 2;
    },
  );
}
