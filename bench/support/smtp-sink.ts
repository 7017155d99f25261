/**
 * A mail relay that accepts every message and keeps none, for benches that run the service in
 * production mode (which needs a real transport): each login from a new device sends its owner a
 * notification, as it would in production. Without a listener, every send failed and logged two errors.
 * Speaks just enough SMTP for nodemailer: greeting, EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export async function startSmtpSink(): Promise<{ url: string; messages: () => number; close(): void }> {
  let messages = 0;
  const server = net.createServer((socket) => {
    let buffered = '';
    let inData = false;
    socket.setEncoding('utf8');
    socket.write('220 bench-sink ESMTP\r\n');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (;;) {
        if (inData) {
          const end = buffered.indexOf('\r\n.\r\n');
          if (end === -1) return;
          buffered = buffered.slice(end + 5);
          inData = false;
          messages++;
          socket.write('250 2.0.0 kept nowhere\r\n');
          continue;
        }
        const lineEnd = buffered.indexOf('\r\n');
        if (lineEnd === -1) return;
        const command = buffered.slice(0, lineEnd).slice(0, 4).toUpperCase();
        buffered = buffered.slice(lineEnd + 2);
        if (command === 'EHLO' || command === 'HELO') socket.write('250-bench-sink\r\n250 8BITMIME\r\n');
        else if (command === 'DATA') {
          inData = true;
          socket.write('354 end with <CRLF>.<CRLF>\r\n');
        } else if (command === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages: () => messages,
    close: () => server.close(),
  };
}
