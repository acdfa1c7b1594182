// Owns the public surface of the structured logger.
export { createLogger, setLogLevel, addLogSink, type Logger, type LoggerOptions, type LogFields, type LogSink, type LogLineSink } from './logger.ts';
export { LOG_LEVELS, isLogLevel, type LogLevel } from './levels.ts';
export { serializeError } from './serialize.ts';
