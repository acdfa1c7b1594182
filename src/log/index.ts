// Owns the public surface of the structured logger.
export { createLogger, type Logger, type LoggerOptions, type LogFields } from './logger.ts';
export { LOG_LEVELS, isLogLevel, type LogLevel } from './levels.ts';
export { serializeError } from './serialize.ts';
