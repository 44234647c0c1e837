/**
 * A launcher like `npm start`'s, with two small parts instead of the service's: a server, and a
 * client that polls it and says so when a poll fails. Each part names the signals it receives.
 * Run as a process by test/integration/start-stop.test.ts, which signals its whole process group
 * as a terminal's Ctrl-C does.
 */
import { Supervisor } from '../../scripts/lib/supervisor';
import { startChildService } from '../../scripts/lib/child-service';
import { childEnv } from '../../config/child-env';

const server = `
const http = require('node:http');
const s = http.createServer((req, res) => res.end('ok')).listen(0, '127.0.0.1', () => console.log('listening ' + s.address().port));
process.on('SIGINT', () => { console.log('server got SIGINT'); process.exit(130); });
process.on('SIGTERM', () => { console.log('server stopping'); s.close(); process.exit(0); });
`;
const client = `
const http = require('node:http');
const port = Number(process.argv[1]);
const poll = () => http.get({ host: '127.0.0.1', port, agent: false }, (res) => res.resume()).on('error', (e) => console.log('connection error ' + e.code));
setInterval(poll, 10);
console.log('polling');
process.on('SIGINT', () => console.log('client got SIGINT'));
process.on('SIGTERM', () => { console.log('client stopping'); setTimeout(() => process.exit(0), 100); });
`;

async function main() {
  const supervisor = new Supervisor('parts');
  const env = childEnv();
  const s = startChildService('server', process.execPath, ['-e', server], { readyPattern: /listening (\d+)/, env });
  supervisor.add('server', () => s.stop(5000), s.exited);
  const port = (await s.ready)[1];
  const c = startChildService('client', process.execPath, ['-e', client, port], { readyPattern: /polling/, env });
  supervisor.add('client', () => c.stop(5000), c.exited);
  await c.ready;
  supervisor.say('parts up');
}

void main();
