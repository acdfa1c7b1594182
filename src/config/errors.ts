// Owns configuration errors: one class with stable codes, each message naming the key and where
// the bad value came from (the file, an environment variable, or the command line).
import { SpindleError } from '../native/index.ts';

export type ConfigErrorCode =
  /** A value has the wrong type, is out of range, or conflicts with another key. */
  | 'CONFIG_INVALID'
  /** The file has a key Spindle does not know (usually a typo). */
  | 'CONFIG_UNKNOWN_KEY'
  /** The file cannot be read or parsed, or --config has no path. */
  | 'CONFIG_FILE';

export class ConfigError extends SpindleError {
  declare readonly code: ConfigErrorCode;
  /** The key path, e.g. "mqtt.ws.port" or "auth.acl[2].topic"; undefined for whole-file errors. */
  readonly key: string | undefined;
  /** Where the value came from, e.g. "file ./spindle.yaml" or "environment variable SPINDLE_WORKERS". */
  readonly source: string | undefined;

  constructor(code: ConfigErrorCode, message: string, key?: string, source?: string, options?: ErrorOptions) {
    super(code, message, undefined, options);
    this.key = key;
    this.source = source;
  }
}
