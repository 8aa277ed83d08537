import type { UserInfo } from '@svc/apimachinery';
import { NOT_MINE, type TokenAuthenticator } from './methods';

/**
 * The static token file: CSV lines `token,user,uid[,"group1,group2"]`.
 * Changes need a restart, as documented for the original server.
 */
export class TokenFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

/** Splits one CSV line, honouring double quotes (with "" as an escaped quote). */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (quoted) throw new TokenFileError('unterminated quote');
  out.push(cur);
  return out;
}

export function parseTokenFile(content: string): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  content.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    let fields: string[];
    try {
      fields = parseCsvLine(line);
    } catch (err) {
      throw new TokenFileError(`token file line ${index + 1}: ${(err as Error).message}`);
    }
    if (fields.length < 3) throw new TokenFileError(`token file line ${index + 1}: expected token,user,uid[,groups], got ${fields.length} columns`);
    const [token, username, uid, ...rest] = fields.map((f) => f.trim()) as [string, string, string, ...string[]];
    if (!token || !username) throw new TokenFileError(`token file line ${index + 1}: token and user must not be empty`);
    const groups = rest.flatMap((g) => g.split(',')).map((g) => g.trim()).filter(Boolean);
    if (tokens.has(token)) throw new TokenFileError(`token file line ${index + 1}: duplicate token`);
    tokens.set(token, { username, uid, groups, extra: {} });
  });
  return tokens;
}

/** The static token file as an authentication method; an unknown token is left to the other methods. */
export function tokenFileAuthenticator(tokens: Map<string, UserInfo>): TokenAuthenticator {
  return {
    name: 'token-file',
    async authenticateToken(token, audiences) {
      const user = tokens.get(token);
      return user ? { status: 'authenticated', user, audiences: [...audiences] } : NOT_MINE;
    },
  };
}
