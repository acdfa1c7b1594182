// The revocation feature's Prometheus metrics of the main thread: the stapler's requests and the
// stapled responses' validity. What the workers count per endpoint (CRL and OCSP refusals, client
// checks and their requests) is written by src/metrics/worker-metrics.ts under the same names.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Stapler } from './stapler.ts';

export const REVOKED_HELP = 'TLS clients refused because their certificate is revoked, by endpoint and by: crl (the endpoint\'s CRL, in the handshake), ocsp (its OCSP responder, at CONNECT: CONNACK 0x87, MQTT 3.1.1: 5).';
export const REQUESTS_HELP = 'OCSP requests to responders, by kind (staple: the server certificate\'s status, fetched by the main thread; client: a client certificate\'s, by a worker) and result: good, revoked, unknown (the answer), or unreachable, timeout, http_error, not_successful (the responder answered an error status), bad_response (unparsable, badly signed, stale or about another certificate), no_responder (a client certificate with no responder or issuer to ask).';

export function registerRevocationMetrics(registry: Registry, stapler: Stapler): void {
  new Counter({
    name: 'spindle_ocsp_requests_total',
    help: REQUESTS_HELP,
    labelNames: ['kind', 'result'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [result, n] of Object.entries(stapler.counts.requests)) this.inc({ kind: 'staple', result }, n);
    },
  });
  new Gauge({
    name: 'spindle_ocsp_staple_valid',
    help: 'Whether the endpoint staples a current OCSP response for its certificate now (1) or none (0: none fetched yet, or the last one expired while the responder did not answer).',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const g of stapler.gauges()) this.set({ endpoint: g.endpoint }, g.stapled ? 1 : 0);
    },
  });
  new Gauge({
    name: 'spindle_ocsp_staple_age_seconds',
    help: 'Age of the endpoint\'s latest OCSP response (now minus its thisUpdate); no sample before the first.',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const g of stapler.gauges()) if (g.ageSeconds !== null) this.set({ endpoint: g.endpoint }, g.ageSeconds);
    },
  });
  new Gauge({
    name: 'spindle_ocsp_staple_expiry_timestamp_seconds',
    help: 'When the endpoint\'s latest OCSP response stops being stapled (its nextUpdate; without one, twice refreshBefore after it was fetched), Unix seconds.',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const g of stapler.gauges()) if (g.expiresAt !== null) this.set({ endpoint: g.endpoint }, g.expiresAt);
    },
  });
}
