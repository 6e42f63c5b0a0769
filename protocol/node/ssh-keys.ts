import { utils } from 'ssh2';

/**
 * SSH key files as OpenSSH writes and reads them: the product's own identity and the emulator's host and client
 * keys are made here, so both sides make keys the same (well-formed) way.
 */

/**
 * A fresh ed25519 key pair in OpenSSH formats. ssh2's generateKeyPairSync drops a leading zero byte of the
 * 32-byte public key (about 1 key in 300), which leaves a key that neither ssh2 nor OpenSSH will parse; such a
 * pair is thrown away and another drawn, so every key this returns parses, and both halves agree.
 */
export function generateEd25519KeyPair(comment?: string): { private: string; public: string } {
  for (let attempt = 0; attempt < 32; attempt++) {
    const pair = utils.generateKeyPairSync('ed25519', comment === undefined ? undefined : { comment });
    const pub = utils.parseKey(pair.public);
    const priv = utils.parseKey(pair.private);
    if (pub instanceof Error || priv instanceof Error) continue;
    const [p1, p2] = [Array.isArray(pub) ? pub[0] : pub, Array.isArray(priv) ? priv[0] : priv];
    if (p1.getPublicSSH().equals(p2.getPublicSSH())) return pair;
  }
  throw new Error('could not generate a well-formed ed25519 key pair');
}

/** Whether `text` is an SSH public key that parses (ssh2's parser, which agrees with OpenSSH on these). */
export function parsesAsPublicKey(text: string): boolean {
  return !(utils.parseKey(text.trim()) instanceof Error);
}
