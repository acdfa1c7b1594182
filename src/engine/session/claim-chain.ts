// ClaimChain: the claims of client ids this worker thread holds, and the order in which a session
// passes along them. A CONNECT claims its client id in the process-wide ClientRegistry; each claim
// has a generation and names the claim before it, so the claims of one client id form a chain,
// and the session passes along that chain one owner at a time: a claim asks the worker of the
// previous claim for the session, and that worker answers only once its own claim is settled (its
// CONNACK sent, or its CONNECT failed). So takeover is linearizable per client id however many
// connections race for it, on one worker or several: the session is handed over whole, a resumed
// session is present, nothing is left behind, and a connection gets CONNACK before it is taken
// over. The chain decides when a session moves; what happens to the session itself (its
// connection taken over, its state exported or adopted) is done through ClaimChainEnv, by the
// session lifecycle (session-lifecycle.ts). Owned by the worker thread.
import type { ClientRegistry } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Session } from './session.ts';
import type { ClaimMessage, SessionState } from './handover.ts';

/** One claim of a client id held by this thread (see the file comment). */
export interface Claim {
  readonly clientId: string;
  readonly generation: number;
  /** The session handle the registry gave the claim (the previous one unless Clean Start). */
  readonly handle: number;
  /** The session once the claim has it (null while it is being handed over, or none). */
  session: Session | null;
  /** CONNACK was sent or the CONNECT failed: the claim may be taken over. */
  settled: boolean;
  /** The next claim's hand-over, waiting for this claim to settle. */
  next: (() => void) | null;
}

/** The claim before a new one, whose worker is asked for the session. */
export interface PreviousClaim {
  readonly worker: number;
  readonly generation: number;
}

/** The next claim asks for the session of the claim `generation`. */
export interface HandoverRequest {
  generation: number;
  resume: boolean;
  /** The worker of the asking claim, and its generation. */
  from: number;
  forGeneration: number;
}

/** What a claim received from the claim before it: the session itself (same worker), its state
 * (another worker), the session loaded from the store (the worker holding it died), none, or
 * word that the worker asked has gone (turned into 'loaded' or 'none' before a claim sees it). */
export type Received = { kind: 'session'; session: Session } | { kind: 'state'; state: SessionState; from: number } | { kind: 'loaded'; session: Session } | { kind: 'none' } | { kind: 'gone' };

/** What the claim chain needs from its worker thread. */
export interface ClaimChainEnv {
  readonly workerId: number;
  readonly registry: Pick<InstanceType<typeof ClientRegistry>, 'claim' | 'release'>;
  readonly stats: Pick<WorkerStats, 'takeoverTimeouts'>;
  readonly log: Logger;
  /** Posts a hand-over message to another worker thread. */
  sendControl(worker: number, msg: ClaimMessage): void;
  /** Loads the stored session of `clientId` under `handle` (when the worker that held it died);
   * null when it is not in the store. */
  loadStored(clientId: string, handle: number): Promise<Session | null>;
  /** Whether `session` is still a client session of this thread. */
  holds(session: Session): boolean;
  /** Gives `session`, whose claim has settled, to the next claim `req` (its connection is taken
   * over), and answers what that claim receives. `cross`: the asker is another worker. */
  giveUp(session: Session, req: HandoverRequest, cross: boolean, reply: (r: Received) => void): void;
  /** What `claim` received after its CONNECT stopped waiting for it: the session stays here,
   * offline (`resume`), or ends. */
  keepLate(claim: Claim, received: Received, resume: boolean): void;
}

/** How long a CONNECT waits for the previous owner of its session before it is refused (the
 * hand-over still completes afterwards: the session is kept, offline). */
export const HANDOVER_WAIT_MS = 10_000;

export class ClaimChain {
  /** Claims this thread holds, by generation. */
  private readonly claims = new Map<number, Claim>();
  /** The claim that holds each session of this thread, by handle. */
  private readonly claimOf = new Map<number, Claim>();
  /** Claims waiting for the session from another worker, by generation. */
  private readonly waiting = new Map<number, { worker: number; resolve(r: Received): void }>();
  private readonly out = new Uint32Array(6);

  constructor(private readonly env: ClaimChainEnv) {}

  /** Claims `clientId` for this thread in the client registry: the new claim, and the claim
   * before it (the session's previous owner) when there was one. */
  claim(clientId: string, clean: boolean): { claim: Claim; previous: PreviousClaim | null } {
    const out = this.out;
    this.env.registry.claim(clientId, this.env.workerId, clean, out);
    const [handle, generation, , prevWorker, prevGeneration, hadPrevious] = out;
    const claim: Claim = { clientId, generation, handle, session: null, settled: false, next: null };
    this.claims.set(generation, claim);
    return { claim, previous: hadPrevious ? { worker: prevWorker, generation: prevGeneration } : null };
  }

  /** Claims `clientId` for a session taken on from the store: settled at once, since no CONNECT
   * waits on it (the session gets the claim's handle). */
  claimRestored(clientId: string): Claim {
    const out = this.out;
    this.env.registry.claim(clientId, this.env.workerId, false, out);
    const claim: Claim = { clientId, generation: out[1], handle: out[0], session: null, settled: true, next: null };
    this.claims.set(claim.generation, claim);
    return claim;
  }

  /** `claim` has its session. */
  bind(claim: Claim, session: Session): void {
    claim.session = session;
    this.claimOf.set(session.handle, claim);
  }

  /** CONNACK was sent, or the CONNECT failed: a hand-over waiting for `claim` proceeds. */
  settle(claim: Claim): void {
    if (claim.settled) return;
    claim.settled = true;
    const next = claim.next;
    claim.next = null;
    next?.();
  }

  /** `claim` got no session and wants none (another node took the client id): the client id is
   * released, and a claim after it gets none. */
  withdraw(claim: Claim): void {
    this.claims.delete(claim.generation);
    this.env.registry.release(claim.clientId, claim.generation);
    this.settle(claim);
  }

  /** `session` ended: its claim leaves the chain and its client id is released (a claim asking for
   * the session once that claim settles gets none). */
  ended(session: Session): void {
    const claim = this.claimOf.get(session.handle);
    if (!claim) return;
    claim.session = null;
    this.claimOf.delete(session.handle);
    this.claims.delete(claim.generation);
    this.env.registry.release(session.clientId, claim.generation);
  }

  /** Asks the worker of the `previous` claim for the session; resolves with what it gives (null
   * when it takes longer than HANDOVER_WAIT_MS: the claim then settles when it arrives, and
   * keepLate keeps the session offline). */
  receive(claim: Claim, previous: PreviousClaim, resume: boolean): Promise<Received | null> {
    const env = this.env;
    const worker = previous.worker;
    const req: HandoverRequest = { generation: previous.generation, resume, from: env.workerId, forGeneration: claim.generation };
    return new Promise((resolve) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        env.stats.takeoverTimeouts++;
        env.log.warn('session hand-over is slow; CONNECT refused, the session is kept', { clientId: claim.clientId, worker });
        resolve(null);
      }, HANDOVER_WAIT_MS);
      const done = (r: Received) => {
        clearTimeout(timer);
        if (!late) {
          resolve(r);
          return;
        }
        // Too late for the CONNECT that asked: the session is kept here, offline.
        env.keepLate(claim, r, resume);
        this.settle(claim);
      };
      if (worker === env.workerId) {
        this.onRequest(req, done, false);
        return;
      }
      this.waiting.set(req.forGeneration, {
        worker,
        resolve: (r) => {
          if (r.kind !== 'gone') {
            done(r);
            return;
          }
          if (!resume) {
            done({ kind: 'none' });
            return;
          }
          // The worker holding the session died: a persistent session comes from the store.
          env.loadStored(claim.clientId, claim.handle).then(
            (s) => done(s ? { kind: 'loaded', session: s } : { kind: 'none' }),
            (err: unknown) => {
              env.log.error('stored session could not be loaded; starting a new one', { clientId: claim.clientId, err });
              done({ kind: 'none' });
            },
          );
        },
      });
      env.sendControl(worker, { t: 'handover', clientId: claim.clientId, ...req });
    });
  }

  /** A request from another worker for the session of one of our claims, or its answer to ours. */
  onMessage(msg: ClaimMessage, from: number): void {
    if (msg.t === 'handover') {
      this.onRequest(msg, (r) => {
        const state = r.kind === 'state' ? r.state : null;
        this.env.sendControl(from, { t: 'handover-reply', forGeneration: msg.forGeneration, state });
      }, true);
      return;
    }
    const w = this.waiting.get(msg.forGeneration);
    if (!w) return;
    this.waiting.delete(msg.forGeneration);
    w.resolve(msg.state ? { kind: 'state', state: msg.state, from } : { kind: 'none' });
  }

  /** A worker died: claims waiting for it get their session from the store. */
  peerGone(worker: number): void {
    for (const [gen, w] of [...this.waiting]) {
      if (w.worker !== worker) continue;
      this.waiting.delete(gen);
      w.resolve({ kind: 'gone' });
    }
  }

  /**
   * The next claim asks for the session of our claim `req.generation`: once that claim has
   * settled, the session is given up (giveUp: its connection taken over, DISCONNECT 0x8E, and the
   * session handed over whole, or ended for Clean Start). `cross`: the asker is another worker.
   */
  private onRequest(req: HandoverRequest, reply: (r: Received) => void, cross: boolean): void {
    const claim = this.claims.get(req.generation);
    if (!claim) {
      reply({ kind: 'none' }); // that claim's session has ended
      return;
    }
    const run = () => this.handOver(claim, req, reply, cross);
    if (claim.settled) run();
    else claim.next = run;
  }

  private handOver(claim: Claim, req: HandoverRequest, reply: (r: Received) => void, cross: boolean): void {
    this.claims.delete(claim.generation);
    const session = claim.session;
    if (!session || !this.env.holds(session)) {
      reply({ kind: 'none' });
      return;
    }
    this.claimOf.delete(session.handle);
    this.env.giveUp(session, req, cross, reply);
  }
}
