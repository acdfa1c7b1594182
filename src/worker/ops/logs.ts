// Log operations on one worker: the level of its logger (and of every child of it), set at run
// time by the admin API (/log/level) through the supervisor.
import { isLogLevel, setLogLevel, type LogLevel } from '../../log/index.ts';
import { OpError, type Op } from './types.ts';

export const logOps = {
  'log.setLevel'(args: { level: LogLevel }, env): { level: LogLevel } {
    if (!isLogLevel(args.level)) throw new OpError('INVALID_PARAMETER', `level must be one of debug, info, warn, error`, 'level');
    setLogLevel(env.log, args.level);
    return { level: args.level };
  },
} satisfies Record<string, Op>;
