import type { Backend } from '../backend';
import type { TpuApi } from '../tpu/api';
import { parseNodeName, type TpuNode } from '../tpu/models';

/**
 * "Add my key to this VM": the product's SSH identity (ssh/keys.ts) put where a VM's guest agent or OS Login will
 * accept it, on either control plane.
 */

/** The metadata `ssh-keys` value with `user:publicKey` added (once); other users' and other keys' lines are kept. */
export function withSshKey(existing: string | undefined, username: string, publicKey: string): string {
  const keyBody = publicKey.trim().split(/\s+/).slice(0, 2).join(' ');
  const lines = (existing ?? '').split('\n').filter((l) => l.trim() !== '');
  const already = lines.some((l) => {
    const [user, ...rest] = l.split(':');
    return user === username && rest.join(':').trim().split(/\s+/).slice(0, 2).join(' ') === keyBody;
  });
  return (already ? lines : [...lines, `${username}:${publicKey.trim()}`]).join('\n');
}

/** "Add my key to this VM": merges the key into the node's metadata through UpdateNode. */
export async function addKeyToNode(api: TpuApi, node: TpuNode, username: string, publicKey: string): Promise<TpuNode> {
  const current = await api.getNode(parseNodeName(node.name));
  const sshKeys = withSshKey(current.metadata['ssh-keys'], username, publicKey);
  if (sshKeys === current.metadata['ssh-keys']) return current;
  return api.updateNodeMetadata(parseNodeName(node.name), { ...current.metadata, 'ssh-keys': sshKeys });
}

/**
 * "Add my key to this VM" on either control plane: where OS Login governs the VM, the key goes into the caller's
 * OS Login profile (metadata keys would be ignored there) and the login name is the profile's; elsewhere into the
 * VM's metadata `ssh-keys` for `username`. Returns who to log in as and which way the key went.
 */
export async function addKeyToVm(backend: Pick<Backend, 'api' | 'osLoginUser'>, node: TpuNode, username: string, publicKey: string): Promise<{ username: string; osLogin: boolean }> {
  const login = await backend.osLoginUser(node, publicKey);
  if (login) return { username: login.username, osLogin: true };
  await addKeyToNode(backend.api, node, username, publicKey);
  return { username, osLogin: false };
}
