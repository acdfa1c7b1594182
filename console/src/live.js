// The live picture: samples the admin server pushes over a WebSocket (/api/live) once a second,
// the last hour of them kept here. Reconnects after a second when the socket closes.
const KEEP = 3600;

export class Live {
  constructor() {
    this.samples = [];
    this.listeners = new Set();
    this.state = 'connecting';
    this.socket = null;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/live`;
    const ws = new WebSocket(url);
    this.socket = ws;
    ws.onopen = () => this.setState('open');
    ws.onmessage = (e) => {
      const s = JSON.parse(e.data);
      this.samples.push(s);
      if (this.samples.length > KEEP) this.samples.splice(0, this.samples.length - KEEP);
      for (const f of this.listeners) f(s);
    };
    ws.onclose = () => {
      this.setState('closed');
      if (!this.stopped) setTimeout(() => this.start(), 1000);
    };
  }

  stop() {
    this.stopped = true;
    this.socket?.close();
  }

  setState(state) {
    this.state = state;
    for (const f of this.listeners) f(null);
  }

  /** Calls `f(sample)` for each new sample (and `f(null)` when the connection changes). */
  on(f) {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  get last() {
    return this.samples[this.samples.length - 1] ?? null;
  }
}
