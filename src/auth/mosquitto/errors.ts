// Owns the errors of Mosquitto file support: a file that cannot be read or parsed.
import { SpindleError } from '../../native/index.ts';

export type MosquittoFileErrorCode =
  /** A password file line is not `username:$6$...` or `username:$7$...`. */
  | 'MOSQUITTO_PASSWD_INVALID'
  /** An ACL file line is not a `topic`, `user` or `pattern` line Mosquitto accepts. */
  | 'MOSQUITTO_ACL_INVALID'
  /** A PSK file line is not `identity:hexkey`. */
  | 'MOSQUITTO_PSK_INVALID'
  /** The file could not be read. */
  | 'MOSQUITTO_FILE_UNREADABLE';

export class MosquittoFileError extends SpindleError {
  declare readonly code: MosquittoFileErrorCode;
  constructor(code: MosquittoFileErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, undefined, options);
  }
}
