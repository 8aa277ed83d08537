import { createCipheriv, createDecipheriv, randomBytes, type CipherGCMTypes } from 'node:crypto';
import type { EncryptionKey, ProviderConfig } from './config';

/**
 * The keyed providers: each key is a cipher whose values carry the prefix
 * `svc:enc:<provider>:v1:<key name>:` (the original's `k8s:enc:...` with this
 * project's word), so a reader knows which provider and key wrote a value.
 */
export const ENCRYPTED_PREFIX = 'svc:enc:';

export interface KeyCipher {
  readonly provider: 'aescbc' | 'aesgcm';
  readonly keyName: string;
  /** `svc:enc:<provider>:v1:<key name>:` */
  readonly prefix: Buffer;
  /** The value after the prefix; `context` (the etcd key) is authenticated where the mode can. */
  encrypt(plain: Buffer, context: Buffer): Buffer;
  /** Throws when the key does not open the value (authentication fails, or the padding is wrong). */
  decrypt(sealed: Buffer, context: Buffer): Buffer;
}

export function prefixOf(provider: string, keyName: string): Buffer {
  return Buffer.from(`${ENCRYPTED_PREFIX}${provider}:v1:${keyName}:`);
}

function gcmName(key: Buffer): CipherGCMTypes {
  return `aes-${key.length * 8}-gcm` as CipherGCMTypes;
}

function cbcName(key: Buffer): string {
  return `aes-${key.length * 8}-cbc`;
}

const GCM_NONCE = 12;
const GCM_TAG = 16;
const CBC_IV = 16;

/**
 * AES-GCM with a random 96-bit nonce per write: nonce, ciphertext, tag.
 * The etcd key is the additional authenticated data, so a value copied
 * under another key does not open. With random nonces a key should be
 * rotated well before 2^32 writes (NIST SP 800-38D).
 */
function aesgcm(key: EncryptionKey): KeyCipher {
  const algorithm = gcmName(key.secret);
  return {
    provider: 'aesgcm',
    keyName: key.name,
    prefix: prefixOf('aesgcm', key.name),
    encrypt(plain, context) {
      const nonce = randomBytes(GCM_NONCE);
      const cipher = createCipheriv(algorithm, key.secret, nonce, { authTagLength: GCM_TAG });
      cipher.setAAD(context);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    decrypt(sealed, context) {
      if (sealed.length < GCM_NONCE + GCM_TAG) throw new Error('the value is too short to be aesgcm data');
      const decipher = createDecipheriv(algorithm, key.secret, sealed.subarray(0, GCM_NONCE), { authTagLength: GCM_TAG });
      decipher.setAAD(context);
      decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG));
      return Buffer.concat([decipher.update(sealed.subarray(GCM_NONCE, sealed.length - GCM_TAG)), decipher.final()]);
    },
  };
}

/**
 * AES-CBC with PKCS#7 padding and a random IV per write: IV, ciphertext.
 * Not authenticated (as the original's): a wrong key is mostly caught by
 * the padding, and what slips through fails as JSON when decoded.
 */
function aescbc(key: EncryptionKey): KeyCipher {
  const algorithm = cbcName(key.secret);
  return {
    provider: 'aescbc',
    keyName: key.name,
    prefix: prefixOf('aescbc', key.name),
    encrypt(plain) {
      const iv = randomBytes(CBC_IV);
      const cipher = createCipheriv(algorithm, key.secret, iv);
      return Buffer.concat([iv, cipher.update(plain), cipher.final()]);
    },
    decrypt(sealed) {
      if (sealed.length < 2 * CBC_IV || sealed.length % CBC_IV !== 0) throw new Error('the value is not a whole number of aescbc blocks');
      const decipher = createDecipheriv(algorithm, key.secret, sealed.subarray(0, CBC_IV));
      return Buffer.concat([decipher.update(sealed.subarray(CBC_IV)), decipher.final()]);
    },
  };
}

/** One provider of a resource's list: identity (plain values) or the ciphers of its keys, first key first. */
export type Provider = { type: 'identity' } | { type: 'keyed'; ciphers: KeyCipher[] };

export function providerOf(config: ProviderConfig): Provider {
  switch (config.type) {
    case 'identity':
      return { type: 'identity' };
    case 'aesgcm':
      return { type: 'keyed', ciphers: config.keys.map(aesgcm) };
    case 'aescbc':
      return { type: 'keyed', ciphers: config.keys.map(aescbc) };
    default:
      // The configuration reader refuses the others before a provider is built.
      throw new Error(`the ${config.type} provider is not supported`);
  }
}
