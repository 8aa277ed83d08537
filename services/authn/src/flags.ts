import { INTERNAL_TLS_FLAGS, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';

export const AUTHN_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7102' },
  'client-ca-file': { description: 'PEM bundle of CAs whose client certificates authenticate users (CN = user, O = groups)', default: '' },
  'token-auth-file': { description: 'Static token file: CSV of token,user,uid[,"group1,group2"]', default: '' },
  'anonymous-auth': {
    description: 'Treat requests without credentials as system:anonymous (true|false). Unset: on unless --authorization-mode names AlwaysAllow',
    boolean: true,
  },
  'authorization-mode': {
    description:
      'The comma-separated authorization modes authz is given (its --authorization-mode). authn does not authorize; it reads this only to default --anonymous-auth, which is off when the modes include AlwaysAllow',
    default: 'AlwaysDeny',
  },
};

/**
 * Whether requests without credentials are anonymous: an explicit
 * `--anonymous-auth` wins; otherwise on unless the authorization modes
 * include AlwaysAllow (SPEC section 5, "Anonymous requests"), where an
 * anonymous request would be allowed everything.
 */
export function anonymousAuthEnabled(flags: ParsedFlags): boolean {
  if (flags.getOptional('anonymous-auth') !== undefined) return flags.getBool('anonymous-auth');
  return !flags
    .get('authorization-mode')
    .split(',')
    .map((m) => m.trim())
    .includes('AlwaysAllow');
}
