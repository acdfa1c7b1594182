// Wills: publishing a session's will when its connection is lost (now, or after its Will Delay
// Interval), and cancelling it when the client comes back in time [MQTT-3.1.2-8, MQTT-3.1.3-9].
// A will is routed like a PUBLISH of the client: authorized, and stored for persistent
// subscribers (and as retained) before it is delivered.
import type { MessageTracer } from '../../broker/trace-context.ts';
import { NO_PUBLISHER } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Authorizer, ClientIdentity } from '../../auth/index.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import { reservedTopic } from '../../protocol/reserved-topics.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import type { Persistence } from './persistence.ts';
import type { Session, Will } from './session.ts';

export interface WillEnv {
  readonly log: Logger;
  readonly stats: WorkerStats;
  readonly router: WorkerRouter;
  readonly persistence: Persistence | null;
  authorizerFor(who: ClientIdentity, peerhost?: () => string): Authorizer;
  /** OpenTelemetry traces: a will is traced as its client's PUBLISH would be. */
  readonly tracer: MessageTracer;
}

export class Wills {
  constructor(private readonly env: WillEnv) {}

  /** The connection of `session` was lost: its will goes out now, or after its delay (capped by
   * the session's expiry: the will goes when the session ends, if first). */
  connectionLost(session: Session, will: Will): void {
    if (will.delay > 0 && session.expiryInterval > 0) this.delay(session, will, Math.min(will.delay, session.expiryInterval) * 1000);
    else this.publish(session, will);
  }

  /** Keeps the will until `ms` pass (or the session ends, or the client comes back first). */
  delay(session: Session, will: Will, ms: number): void {
    session.will = will;
    session.willTimer = setTimeout(() => {
      session.willTimer = null;
      const w = session.will;
      session.will = null;
      if (w) this.publish(session, w);
    }, ms);
  }

  /** A new connection for the session's client id: a will still waiting is not sent
   * [MQTT-3.1.2-8], whether the session continues or not. */
  cancel(session: Session): void {
    if (session.willTimer) clearTimeout(session.willTimer);
    session.willTimer = null;
    session.will = null;
  }

  publish(session: Session, will: Will): void {
    const base = will.message;
    // The will's Message Expiry Interval counts from its publication (MQTT 5.0 section 3.1.3.2.4).
    const message = { ...base, expiresAt: will.expiryInterval > 0 ? Date.now() + will.expiryInterval * 1000 : 0, receivedAt: Date.now() };
    if (reservedTopic(message.topic)) return;
    const env = this.env;
    const identity = session.identity ?? { clientId: session.clientId, username: session.username };
    const allowed = env.authorizerFor(identity).authorize(identity, 'publish', message.topic);
    const go = (ok: boolean) => {
      if (!ok) {
        env.stats.dropped.notAuthorized++;
        return;
      }
      // Past a retained-message limit a will is refused like a PUBLISH of its client (no one to
      // tell: dropped and counted, see handlers/publish.ts refuseRetained).
      const refusal = message.retain && env.router.retainLimited ? env.router.retainRefusal(message) : null;
      if (refusal !== null) {
        env.stats.retainedRefused[refusal]++;
        return;
      }
      const persistence = env.persistence;
      const tracer = env.tracer;
      const t = tracer.originated(session.clientId, message);
      if (!persistence) {
        const matched = env.router.publish(message, NO_PUBLISHER, 0);
        if (t !== undefined) {
          tracer.routed(t, matched);
          tracer.finished(t, session.clientId, message.topic, message.qos, matched);
        }
        return;
      }
      // Stored for persistent subscribers (and as retained) before it is delivered, like a PUBLISH.
      const routed = env.router.route(message, NO_PUBLISHER, 0);
      if (t !== undefined) tracer.routed(t, routed.length);
      const waits = [persistence.messageRouted(message, routed), message.retain ? persistence.retained(message) : undefined].filter((p) => p !== undefined);
      Promise.all(waits).then(
        () => {
          env.router.deliverRouted(message, routed);
          if (t !== undefined) tracer.finished(t, session.clientId, message.topic, message.qos, routed.length);
        },
        (err: unknown) => {
          env.router.discardRouted(routed);
          env.router.releaseRetained(message);
          env.log.error('will could not be stored; not published', { clientId: session.clientId, err });
        },
      );
    };
    if (typeof allowed === 'boolean') go(allowed);
    else allowed.then(go, (err: unknown) => env.log.error('will authorization failed', { clientId: session.clientId, err }));
  }
}
