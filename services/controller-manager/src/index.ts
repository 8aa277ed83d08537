/**
 * The controller-manager: controllers that keep the API's promises by
 * calling the API (namespace deletion empties a namespace before it goes).
 */
export { start, type ControllerManagerConfig, type ControllerManagerHandle } from './server';
export { ApiClient, loadKubeconfig, type Credentials, type WatchEvent } from './client';
export { NamespaceController } from './namespace-controller';
export { CONTROLLER_MANAGER_FLAGS } from './flags';
