// handle_auth: enhanced authentication (MQTT 5.0 section 4.12). A method is an AuthMethod
// registered with the worker under its name (SCRAM-SHA-256 and SCRAM-SHA-512 are, src/auth/scram).
// An exchange starts at CONNECT (connect.ts calls beginExchange) or, once connected, with the
// client's AUTH 0x19 (re-authentication, section 4.12.1); each AUTH 0x18 of the client goes to the
// method's step, whose answer is AUTH 0x18 again or the end: CONNACK (resumed in connect.ts) or,
// for a re-authentication, AUTH 0x00 or DISCONNECT 0x87. An exchange lasts auth.exchangeTimeout
// at most. Costs nothing to a CONNECT without an Authentication Method.
import type { Packet } from '../../native/index.ts';
import type { AuthExchangeRequest, AuthMethod, AuthResult, AuthStep } from '../../auth/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import * as send from '../../protocol/send.ts';
import type { AuthExchange, Client, HandlerHost, HandlerResult } from './client.ts';

/**
 * Starts an exchange with `method` (named `name`). `resume` goes on with the CONNECT once it is
 * over (null: a re-authentication of a connected client). During CONNECT the answer is the
 * connection's to wait for (the packets that follow are held); a re-authentication never holds
 * the client's traffic.
 */
export function beginExchange(host: HandlerHost, c: Client, name: string, method: AuthMethod, req: AuthExchangeRequest, resume: AuthExchange['resume']): HandlerResult {
  const ex: AuthExchange = { method: name, next: null, timer: exchangeTimer(host, c, host.config.auth.exchangeTimeout * 1000), resume };
  c.authExchange = ex;
  return advance(host, c, ex, () => method.start(req));
}

/** The timer is made before the exchange exists; it finds it on the connection. */
function exchangeTimer(host: HandlerHost, c: Client, ms: number): NodeJS.Timeout {
  const timer = setTimeout(() => {
    const ex = c.authExchange;
    if (ex === null || ex.timer !== timer || c.isClosed()) return;
    c.authExchange = null;
    host.stats.enhancedAuth.timeouts++;
    if (ex.resume === null) {
      host.stats.enhancedAuth.reauthFailure++;
      c.disconnectWith(RC.NOT_AUTHORIZED, 'timeout', 're-authentication not completed in time');
      return;
    }
    c.endpoint.stats.connectionError('0x87');
    c.write(send.connack(5, false, RC.NOT_AUTHORIZED, { authenticationMethod: ex.method, reasonString: 'authentication not completed in time' }));
    c.close('timeout');
  }, ms);
  timer.unref();
  return timer;
}

/** Runs one step of the method (a throw is the method's fault: refused as unavailable, logged). */
function advance(host: HandlerHost, c: Client, ex: AuthExchange, run: () => AuthStep | Promise<AuthStep>): HandlerResult {
  let step: AuthStep | Promise<AuthStep>;
  try {
    step = run();
  } catch (err) {
    return methodFailed(host, c, ex, err);
  }
  if (step instanceof Promise) {
    const after = step.then((s) => stepped(host, c, ex, s), (err: unknown) => methodFailed(host, c, ex, err));
    if (ex.resume !== null) return after;
    after.catch((err: unknown) => host.log.error('re-authentication failed', { clientId: c.clientId, err }));
    return;
  }
  return stepped(host, c, ex, step);
}

function methodFailed(host: HandlerHost, c: Client, ex: AuthExchange, err: unknown): HandlerResult {
  host.log.error('enhanced authentication method failed', { method: ex.method, clientId: c.clientId, err });
  return stepped(host, c, ex, { kind: 'done', result: { ok: false, reason: 'unavailable' } });
}

function stepped(host: HandlerHost, c: Client, ex: AuthExchange, step: AuthStep): HandlerResult {
  if (c.isClosed() || c.authExchange !== ex) return; // closed, or timed out, meanwhile
  if (step.kind === 'continue') {
    // [MQTT-4.12.0-2] AUTH 0x18; [MQTT-4.12.0-5] with the method of the CONNECT.
    ex.next = step.next;
    c.write(send.auth(RC.CONTINUE_AUTHENTICATION, { authenticationMethod: ex.method, authenticationData: step.data }));
    return;
  }
  clearTimeout(ex.timer);
  c.authExchange = null;
  if (ex.resume !== null) return ex.resume(step.result, step.data);
  reauthenticated(host, c, ex.method, step.result, step.data);
}

/** The end of a re-authentication: AUTH 0x00 with the method's last data, or DISCONNECT 0x87
 * [MQTT-4.12.1-2]. It must prove the identity the connection has: no change of username. */
function reauthenticated(host: HandlerHost, c: Client, method: string, result: AuthResult, data: Buffer | undefined): void {
  if (result.ok && (result.username ?? c.username) === c.username) {
    host.stats.enhancedAuth.reauthSuccess++;
    c.write(send.auth(RC.SUCCESS, data === undefined ? { authenticationMethod: method } : { authenticationMethod: method, authenticationData: data }));
    return;
  }
  host.stats.enhancedAuth.reauthFailure++;
  const why = result.ok ? 're-authentication named another user' : result.reason === 'unavailable' ? 're-authentication could not be checked' : 're-authentication failed';
  c.disconnectWith(RC.NOT_AUTHORIZED, 'not_authorized', why);
}

export function handleAuth(host: HandlerHost, c: Client, p: Packet): HandlerResult {
  const method = p.properties?.authenticationMethod ?? undefined;
  // [MQTT-4.12.0-7] no AUTH from a client whose CONNECT had no Authentication Method;
  // [MQTT-4.12.0-5] [MQTT-4.12.1-1] every AUTH carries the method of the CONNECT.
  if (c.authMethod === undefined) return authProtocolError(c, 'AUTH without an authentication method in CONNECT');
  if (method !== c.authMethod) return authProtocolError(c, `AUTH with authentication method ${method === undefined ? '(none)' : JSON.stringify(method)}, not ${JSON.stringify(c.authMethod)}`);
  const reason = p.reasonCode ?? RC.SUCCESS;
  const ex = c.authExchange;
  const data = p.properties?.authenticationData ?? undefined;
  if (reason === RC.CONTINUE_AUTHENTICATION) {
    // [MQTT-4.12.0-3] the client answers the server's AUTH 0x18, and only that.
    const next = ex?.next ?? null;
    if (ex === null || next === null) return authProtocolError(c, 'AUTH 0x18 when no step of an authentication exchange is awaited');
    ex.next = null;
    return advance(host, c, ex, () => next.step(data));
  }
  if (reason === RC.RE_AUTHENTICATE && c.state === 'connected' && ex === null) {
    // [MQTT-4.12.1-1] a re-authentication with the method of the CONNECT.
    if (!c.endpoint.config.enableAuth) {
      // The endpoint checks nobody: there is nothing to prove.
      host.stats.enhancedAuth.reauthSuccess++;
      c.write(send.auth(RC.SUCCESS, { authenticationMethod: method }));
      return;
    }
    const m = host.authMethods.get(method);
    if (m === undefined) return authProtocolError(c, `authentication method ${JSON.stringify(method)} is no longer offered`);
    const req: AuthExchangeRequest = { clientId: c.clientId, username: c.username, data, remoteAddress: c.remoteAddress, reauthenticating: true };
    return beginExchange(host, c, method, m, req, null);
  }
  const what = reason === RC.RE_AUTHENTICATE ? (c.state === 'connected' ? 'AUTH 0x19 during an authentication exchange' : 'AUTH 0x19 before CONNACK') : `AUTH with reason code 0x${reason.toString(16).padStart(2, '0')} from a client`;
  return authProtocolError(c, what);
}

/** A protocol error of the exchange: CONNACK 0x82 before CONNACK was sent, DISCONNECT 0x82 after. */
function authProtocolError(c: Client, message: string): void {
  if (c.state === 'connecting') {
    c.endpoint.stats.connectionError('0x82');
    c.write(send.connack(c.version, false, RC.PROTOCOL_ERROR, { reasonString: message }));
    c.close('protocol_error');
    return;
  }
  c.protocolError(RC.PROTOCOL_ERROR, message);
}
