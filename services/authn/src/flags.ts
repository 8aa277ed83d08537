import type { FlagSpecs } from '@svc/service-kit';

export const AUTHN_FLAGS: FlagSpecs = {
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7102' },
  'client-ca-file': { description: 'PEM bundle of CAs whose client certificates authenticate users (CN = user, O = groups)', default: '' },
  'token-auth-file': { description: 'Static token file: CSV of token,user,uid[,"group1,group2"]', default: '' },
  'anonymous-auth': { description: 'Treat requests without credentials as system:anonymous', default: 'true', boolean: true },
};
