// Owns the one command-line option the configuration reads: --config PATH (or --config=PATH,
// -c PATH). Other arguments belong to the caller and are left alone.
import { ConfigError } from './errors.ts';

/** The config file path given on the command line, or undefined; the last one wins. */
export function configPathFromArgv(argv: readonly string[]): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--config' || arg === '-c') {
      const value = argv[i + 1];
      if (value === undefined || value === '' || value.startsWith('-')) {
        throw new ConfigError('CONFIG_FILE', `${arg} needs a file path`, undefined, 'command line');
      }
      found = value;
      i++;
    } else if (arg.startsWith('--config=')) {
      const value = arg.slice('--config='.length);
      if (value === '') throw new ConfigError('CONFIG_FILE', '--config= needs a file path', undefined, 'command line');
      found = value;
    }
  }
  return found;
}
