import type { Backend } from '../core/backend';
import { ConnectionManager, hostKeyOptionsFor } from '../core/ssh/connection';
import type { CommandContext } from './context';

/**
 * The CLI's one SSH connection owner: made on first use (its host-key options follow the backend and
 * `--accept-new-host-keys`, both fixed for one invocation) and closed when the command ends, so everything a
 * command does on a worker — sync, start, tail, stop — shares one connection per worker.
 */
export class CliConnections {
  private manager: ConnectionManager | undefined;

  get(kind: Backend['kind'], acceptNewHostKeys: boolean): ConnectionManager {
    this.manager ??= new ConnectionManager(hostKeyOptionsFor(kind, acceptNewHostKeys));
    return this.manager;
  }

  close(): void {
    this.manager?.dispose();
    this.manager = undefined;
  }
}

/** The command's connection owner for `backend`. */
export function connectionsFor(ctx: CommandContext, backend: Pick<Backend, 'kind'>): ConnectionManager {
  return ctx.connections.get(backend.kind, Boolean(ctx.values['accept-new-host-keys']));
}
