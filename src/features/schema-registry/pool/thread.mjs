// A schema pool thread's entry from the TypeScript sources (piscina loads it): registers tsx so
// the task handler can be loaded, then exports it as piscina expects.
import { register } from 'tsx/esm/api';

register();
const { schemaTask } = await import('./task.ts');
export default schemaTask;
