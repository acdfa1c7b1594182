// Aedes over plain TCP for the comparison bench: `node bench/brokers/aedes-server.mjs PORT [HOST]`.
// Default options (in-memory persistence, mqemitter); prints "listening PORT" once accepting and
// exits 0 on SIGTERM/SIGINT. Aedes speaks MQTT 3.1 and 3.1.1 only (a 5.0 CONNECT gets return code 1).
import net from 'node:net';
import { Aedes } from 'aedes';

const port = Number(process.argv[2] ?? 1883);
const host = process.argv[3] ?? '127.0.0.1';

const broker = await Aedes.createBroker();
const server = net.createServer(broker.handle);
server.listen(port, host, () => console.log(`listening ${port}`));

function stop() {
  server.close();
  broker.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
