// The Transport the test clients use over their own stdin and stdout:
// built from the official TypeScript SDK's ReadBuffer and
// serializeMessage, as its StdioClientTransport reads a server's stdout.
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';

export class StdioPipe {
  constructor() {
    this.buffer = new ReadBuffer();
  }
  async start() {
    process.stdin.on('data', (chunk) => {
      this.buffer.append(chunk);
      for (;;) {
        let message;
        try {
          message = this.buffer.readMessage();
        } catch (err) {
          this.onerror?.(err);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    process.stdin.on('end', () => this.onclose?.());
  }
  async send(message) {
    process.stdout.write(serializeMessage(message));
  }
  async close() {
    process.stdin.pause();
    this.onclose?.();
  }
}
