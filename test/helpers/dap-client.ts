import * as net from 'node:net';

/**
 * A minimal Debug Adapter Protocol client: JSON messages over TCP or a unix socket, each preceded by a `Content-Length`
 * header (https://microsoft.github.io/debug-adapter-protocol/overview#base-protocol). Enough to drive a
 * debug adapter (debugpy) the way VS Code does: requests with responses matched by seq, events kept in order.
 */

export interface DapMessage {
  seq: number;
  type: 'request' | 'response' | 'event';
  command?: string;
  event?: string;
  request_seq?: number;
  success?: boolean;
  message?: string;
  body?: Record<string, unknown>;
}

export class DapClient {
  private seq = 1;
  private buffer = Buffer.alloc(0);
  private readonly pending = new Map<number, { resolve: (m: DapMessage) => void; reject: (e: Error) => void }>();
  private readonly waiters: { pred: (m: DapMessage) => boolean; resolve: (m: DapMessage) => void }[] = [];
  readonly events: DapMessage[] = [];
  /** Requests the adapter sent us (e.g. runInTerminal); answered with success=false. */
  readonly reverseRequests: DapMessage[] = [];

  private constructor(private readonly sock: net.Socket) {
    sock.on('data', (b: Buffer) => this.onData(b));
    sock.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('the debug adapter closed the connection'));
      this.pending.clear();
    });
  }

  static connect(port: number, host = '127.0.0.1'): Promise<DapClient> {
    return DapClient.open(() => net.connect(port, host));
  }

  /** Over a unix socket (the local end of the product's debugger tunnel). */
  static connectSocket(socketPath: string): Promise<DapClient> {
    return DapClient.open(() => net.connect({ path: socketPath }));
  }

  private static open(connect: () => net.Socket): Promise<DapClient> {
    return new Promise((resolve, reject) => {
      const sock = connect();
      sock.once('error', reject);
      sock.once('connect', () => {
        sock.off('error', reject);
        sock.on('error', () => undefined);
        resolve(new DapClient(sock));
      });
    });
  }

  /** Sends a request; resolves with its response, rejects when the adapter answers success=false. */
  async request(command: string, args?: Record<string, unknown>): Promise<DapMessage> {
    const seq = this.seq++;
    const answer = new Promise<DapMessage>((resolve, reject) => this.pending.set(seq, { resolve, reject }));
    this.send({ seq, type: 'request', command, ...(args ? { arguments: args } : {}) });
    const r = await answer;
    if (!r.success) throw new Error(`DAP ${command} failed: ${r.message ?? JSON.stringify(r.body)}`);
    return r;
  }

  /** The first event named `name` (already received or still to come) that `pred` accepts. */
  event(name: string, timeoutMs: number, pred: (m: DapMessage) => boolean = () => true): Promise<DapMessage> {
    const match = (m: DapMessage) => m.type === 'event' && m.event === name && pred(m);
    const seen = this.events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no DAP "${name}" event within ${timeoutMs} ms (events: ${this.events.map((e) => e.event).join(', ')})`)), timeoutMs);
      this.waiters.push({
        pred: match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  close(): void {
    this.sock.destroy();
  }

  private send(msg: Record<string, unknown>): void {
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    this.sock.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const header = this.buffer.subarray(0, end).toString('ascii');
      const m = /Content-Length: *(\d+)/i.exec(header);
      if (!m) throw new Error(`DAP header without Content-Length: ${header}`);
      const length = Number(m[1]);
      if (this.buffer.length < end + 4 + length) return;
      const msg = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString('utf8')) as DapMessage;
      this.buffer = this.buffer.subarray(end + 4 + length);
      this.dispatch(msg);
    }
  }

  private dispatch(msg: DapMessage): void {
    if (msg.type === 'response' && msg.request_seq !== undefined) {
      const p = this.pending.get(msg.request_seq);
      this.pending.delete(msg.request_seq);
      p?.resolve(msg);
    } else if (msg.type === 'event') {
      this.events.push(msg);
      for (const w of [...this.waiters]) {
        if (w.pred(msg)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    } else if (msg.type === 'request') {
      this.reverseRequests.push(msg);
      this.send({ seq: this.seq++, type: 'response', request_seq: msg.seq, command: msg.command, success: false, message: 'not supported by the test client' });
    }
  }
}
