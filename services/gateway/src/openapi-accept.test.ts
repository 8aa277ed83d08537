import { wantsOpenApiV2Protobuf } from './router';

describe('the form of /openapi/v2 a client asks for', () => {
  test.each([
    ['application/com.github.proto-openapi.spec.v2@v1.0+protobuf', true],
    ['application/com.github.proto-openapi.spec.v2.v1.0+protobuf', true],
    ['application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json', true],
    ['application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf', false],
    ['application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0, application/json', false],
    ['*/*', false],
    ['', false],
    [undefined, false],
  ])('Accept %j: protobuf %s', (accept, expected) => {
    expect(wantsOpenApiV2Protobuf(accept)).toBe(expected);
  });
});
