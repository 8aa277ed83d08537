/**
 * The gateway: HTTPS, the filter chain, content negotiation, discovery and
 * the verb handlers in front of the backend services. `start(config)` runs it.
 */
export { start, DEFAULT_LIMITS, type GatewayConfig, type GatewayHandle } from './server';
export { SYSTEM_NAMESPACES } from '@svc/apimachinery';
export { GATEWAY_FLAGS } from './flags';
export { parseRequestInfo, type RequestInfo } from './request-info';
export { negotiateOutput, type ProtobufCodec, type OutputFormat } from './negotiation';
export type { GatewayDocuments, GatewayLimits } from './backends';
