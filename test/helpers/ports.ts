// Ports on 127.0.0.1 for the servers tests start themselves (HAProxy, slapd, an OCSP responder,
// brokers): one a server may bind now, and whether one takes connections yet. Needs nothing.
import net from 'node:net';

/** A port nothing listens on now (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether `port` on 127.0.0.1 takes a connection (closed at once). */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
