// CommandManager: the commands' owner (main thread). Keeps them as admin documents of kind
// 'command' (with their passwords, so a consumer reconnects after a restart; nothing it answers
// holds one), validates a command against its type (registry.ts) and the MQTT mapping, runs one
// CommandRunner per command while it is enabled (started at load, i.e. at broker start), and
// stops them all at close, before the broker shuts down. In a cluster (leases given) a command
// that publishes into the broker runs on one node at a time, the one holding its lease; a
// registration (it publishes nothing: each node registers itself) runs on every node.
import { randomBytes } from 'node:crypto';

import type { Logger } from '../../log/index.ts';
import type { RunLeases } from '../../cluster/run-leases.ts';
import type { Store } from '../../store/types.ts';
import { redactConfig } from '../../sources/redact.ts';
import { SourceConfigError } from '../../sources/types.ts';
import { emptyCounters, type PublishHost } from './delivery.ts';
import { CommandError } from './errors.ts';
import { MAPPING_FIELDS, Mapping, type MappingLimits } from './mapping.ts';
import { commandType, implementedTypes } from './registry.ts';
import { CommandRunner, type RunnerStatus } from './runner.ts';
import { SPEC_COMMAND_TYPES, type BrokerInfo, type CommandDoc, type CommandState, type CommandType } from './types.ts';

export const COMMAND_KIND = 'command';
const NAME_MAX = 128;

export interface NewCommand {
  id?: string;
  name?: string;
  type: string;
  config: Record<string, unknown>;
  enabled?: boolean;
}

export interface CommandChange {
  name?: string;
  type?: string;
  /** Merged into the stored config: a field given replaces it, a field given as null removes it
   * (so a password need not be sent again). */
  config?: Record<string, unknown>;
  enabled?: boolean;
}

/** A command as the API shows it: no password, and its state now. */
export interface CommandView extends CommandDoc {
  state: CommandState;
}

export interface CommandRuntime extends RunnerStatus {
  id: string;
  name: string;
  type: CommandType;
  enabled: boolean;
  /** In a cluster: the node running it (null: none known); absent without a cluster. */
  runningOn?: string | null;
}

const leaseKey = (id: string) => `command.${id}`;

interface Live {
  doc: CommandDoc;
  /** null: a stored command that no longer validates (kept, disabled, logged); `invalid` says why. */
  runner: CommandRunner | null;
  invalid?: string;
}

export class CommandManager {
  private readonly commands = new Map<string, Live>();
  private leases: RunLeases | null = null;

  constructor(
    private readonly host: PublishHost,
    private readonly store: Store,
    private readonly log: Logger,
    private readonly limits: MappingLimits,
    private readonly broker: BrokerInfo,
  ) {}

  /** In a cluster, before load: commands that publish run where their lease is held. */
  useLeases(leases: RunLeases): void {
    this.leases = leases;
  }

  /** Reads the stored commands and starts the enabled ones. */
  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<CommandDoc>(COMMAND_KIND)) this.install(doc);
  }

  /** A command added, changed or removed on another node of the cluster (`doc` null: removed),
   * applied here as this node's API would (the store is written by the caller). */
  async applyStored(id: string, doc: CommandDoc | null): Promise<void> {
    const live = this.commands.get(id);
    if (live) {
      await this.halt(live);
      this.commands.delete(id);
    }
    if (doc !== null) this.install(doc);
  }

  private install(doc: CommandDoc): void {
    try {
      const live: Live = { doc, runner: this.runner(doc) };
      this.commands.set(doc.id, live);
      if (doc.enabled) this.run(live);
    } catch (err) {
      const invalid = (err as Error).message;
      this.log.error('stored command cannot run; kept disabled', { command: doc.id, name: doc.name, error: invalid });
      this.commands.set(doc.id, { doc: { ...doc, enabled: false }, runner: null, invalid });
    }
  }

  /** Starts a command: here, or, in a cluster, on the node holding its lease. */
  private run(live: Live): void {
    const runner = live.runner!;
    if (this.leases === null || commandType(live.doc.type)?.publishes === false) {
      runner.start();
      return;
    }
    this.leases.want(leaseKey(live.doc.id), {
      granted: () => {
        if (live.runner === runner && live.doc.enabled) runner.start();
      },
      lost: () => void runner.stop(),
    });
  }

  /** Stops a command here (and gives its lease up, after it stopped). */
  private async halt(live: Live): Promise<void> {
    await live.runner?.stop();
    await this.leases?.release(leaseKey(live.doc.id));
  }

  async add(input: NewCommand): Promise<CommandView> {
    const id = input.id ?? `command-${randomBytes(4).toString('hex')}`;
    if (this.commands.has(id)) throw new CommandError(409, 'id', `id: command ${id} exists`);
    const name = input.name ?? id;
    this.checkName(name, id);
    const doc: CommandDoc = { id, name, type: this.checkType(input.type), config: input.config, enabled: input.enabled ?? true, createTime: new Date().toISOString() };
    const runner = this.runner(doc);
    await this.store.putAdmin(COMMAND_KIND, id, doc);
    const live: Live = { doc, runner };
    this.commands.set(id, live);
    if (doc.enabled) this.run(live);
    this.log.info('command added', { command: id, name, type: doc.type, enabled: doc.enabled });
    return this.view(this.commands.get(id)!);
  }

  /** Changes a command; a running one is stopped and started again with the new config. */
  async update(id: string, change: CommandChange): Promise<CommandView> {
    const live = this.get(id);
    if (change.type !== undefined && change.type !== live.doc.type) throw new CommandError(400, 'type', `type: a command's type cannot change (it is ${live.doc.type}); add another command`);
    if (change.name !== undefined) this.checkName(change.name, id);
    const config = { ...live.doc.config };
    for (const [k, v] of Object.entries(change.config ?? {})) {
      if (v === null) delete config[k];
      else config[k] = v;
    }
    const doc: CommandDoc = { ...live.doc, name: change.name ?? live.doc.name, config, enabled: change.enabled ?? live.doc.enabled };
    const runner = this.runner(doc);
    await this.store.putAdmin(COMMAND_KIND, id, doc);
    await this.halt(live);
    Object.assign(live, { doc, runner, invalid: undefined });
    if (doc.enabled) this.run(live);
    return this.view(live);
  }

  async delete(id: string): Promise<void> {
    const live = this.get(id);
    await this.halt(live);
    this.commands.delete(id);
    await this.store.deleteAdmin(COMMAND_KIND, id);
    this.log.info('command deleted', { command: id });
  }

  /** Enables and starts a command (one that failed is tried again), or stops and disables it. */
  async setEnabled(id: string, enabled: boolean): Promise<CommandView> {
    const live = this.get(id);
    if (live.runner === null) throw new CommandError(400, 'id', `id: command ${id} no longer validates (${live.invalid}); update its config first`);
    if (live.doc.enabled !== enabled) {
      live.doc = { ...live.doc, enabled };
      await this.store.putAdmin(COMMAND_KIND, id, live.doc);
    }
    if (enabled) {
      if (live.runner.status().state === 'failed') await this.halt(live);
      this.run(live);
    } else await this.halt(live);
    return this.view(live);
  }

  list(filter: { type?: string; name?: string; id?: string } = {}): CommandView[] {
    return [...this.commands.values()]
      .filter(({ doc }) => (filter.type === undefined || doc.type === filter.type) && (filter.name === undefined || doc.name.includes(filter.name)) && (filter.id === undefined || doc.id === filter.id))
      .sort((a, b) => a.doc.createTime.localeCompare(b.doc.createTime) || a.doc.id.localeCompare(b.doc.id))
      .map((l) => this.view(l));
  }

  runtime(id: string): CommandRuntime {
    return this.runtimeOf(this.get(id));
  }

  allRuntimes(): CommandRuntime[] {
    return [...this.commands.values()].map((l) => this.runtimeOf(l));
  }

  /** Stops every command (at broker shutdown): consumers close, nothing more is acknowledged,
   * registrations deregister (each close is bounded: 10 s). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.commands.values()].map((l) => this.halt(l)));
  }

  private runtimeOf(live: Live): CommandRuntime {
    const { id, name, type, enabled } = live.doc;
    const status: RunnerStatus = live.runner?.status() ?? { state: 'failed', since: live.doc.createTime, lastError: live.invalid ?? null, lastErrorAt: null, reconnects: 0, lag: null, ...emptyCounters(), details: null };
    const runtime: CommandRuntime = { id, name, type, enabled, ...status };
    if (this.leases !== null) runtime.runningOn = commandType(type)?.publishes === false ? null : this.leases.owner(leaseKey(id));
    return runtime;
  }

  private view(live: Live): CommandView {
    return { ...live.doc, config: redactConfig(live.doc.config), state: live.runner?.status().state ?? 'failed' };
  }

  private get(id: string): Live {
    const live = this.commands.get(id);
    if (!live) throw new CommandError(404, 'id', `command ${id} not found`);
    return live;
  }

  private checkName(name: string, id: string): void {
    if (name.length === 0 || name.length > NAME_MAX) throw new CommandError(400, 'name', `name: must be 1 to ${NAME_MAX} characters`);
    for (const l of this.commands.values()) if (l.doc.name === name && l.doc.id !== id) throw new CommandError(409, 'name', `name: a command named ${JSON.stringify(name)} exists`);
  }

  private checkType(type: string): CommandType {
    if (commandType(type)) return type as CommandType;
    const implemented = implementedTypes().join(', ');
    if ((SPEC_COMMAND_TYPES as readonly string[]).includes(type)) throw new CommandError(400, 'type', `type: ${type} is not available in this build (available: ${implemented})`);
    throw new CommandError(400, 'type', `type: must be one of ${implemented}, got ${JSON.stringify(type)}`);
  }

  /** Validates a command (its type's config and the MQTT mapping) and makes its runner. */
  private runner(doc: CommandDoc): CommandRunner {
    const spec = commandType(this.checkType(doc.type))!;
    const publishes = spec.publishes !== false;
    for (const key of Object.keys(doc.config)) {
      if (!spec.fields.includes(key) && !(publishes && (MAPPING_FIELDS as readonly string[]).includes(key))) throw new CommandError(400, `config.${key}`, `config.${key}: unknown field of a ${doc.type} command`);
    }
    const mapping = publishes ? Mapping.parse(doc.config, this.limits) : null;
    let config: unknown;
    try {
      config = spec.parse(doc.config);
    } catch (err) {
      if (err instanceof SourceConfigError) throw new CommandError(400, err.field, err.message);
      throw err;
    }
    return new CommandRunner(doc.id, spec, config, mapping, this.host, this.log.child({ command: doc.id, type: doc.type }), this.broker);
  }
}
