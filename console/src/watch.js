// The socket of the live message view and the log tail (/api/watch): one per page that uses it,
// opened when the page opens and closed when it closes (the server then ends its subscriptions).
// Requests are JSON ({t: 'subscribe' | 'unsubscribe', filter} or {t: 'tail', on}); the server
// answers each and pushes batches at most ten times a second. Reconnects after a second when the
// socket closes while the page is open, and calls onOpen again (the page asks for its filters again).
export class Watch {
  constructor(onFrame, onState) {
    this.onFrame = onFrame;
    this.onState = onState;
    this.socket = null;
    this.stopped = false;
    this.retry = null;
  }

  start() {
    this.stopped = false;
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/watch`);
    this.socket = ws;
    ws.onopen = () => this.onState('open');
    ws.onmessage = (e) => {
      let frame;
      try {
        frame = JSON.parse(e.data);
      } catch {
        return;
      }
      this.onFrame(frame);
    };
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.onState('closed');
      if (!this.stopped) this.retry = setTimeout(() => this.start(), 1000);
    };
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    const ws = this.socket;
    this.socket = null;
    ws?.close();
  }

  /** False when the socket is not open (the request is not queued: onOpen asks again). */
  send(request) {
    if (this.socket?.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(request));
    return true;
  }
}

/** Calls `fn` at most once per animation frame, however often `schedule()` is called. */
export function perFrame(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}
